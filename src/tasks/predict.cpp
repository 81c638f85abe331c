#include "lstmlm/tasks/predict.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/keyboard.hpp"
#include "lstmlm/tasks/mix.hpp"

namespace lstmlm::tasks {

std::vector<int32_t> context_ids(const Model& model, const std::string& text, const PredictOptions& opt,
                                 const LineRef& where, std::vector<std::string>* skipped) {
  std::vector<int32_t> ids;
  // The start token is part of the context (windowed or not), as in score; none with --ids.
  int32_t start = start_token(model.tokenizer());
  if (opt.add_start && !opt.ids_input && start >= 0) ids.push_back(start);
  for (const auto& t : read_tokens(model, text, opt.ids_input, opt.oov, where)) {
    if (t.id >= 0)
      ids.push_back(t.id);
    else if (skipped)
      skipped->push_back(t.text);
  }
  if (ids.empty() && opt.window.mode != WindowMode::Pad)
    throw where.error(
        "empty context: nothing to predict from (the model has no bos_token or eos_token to start from; give "
        "at "
        "least one token, or use --pad-to)");
  return ids;
}

std::vector<Candidate> top_candidates(const Model& model, const float* logprobs, int top) {
  int32_t v = model.vocab_size();
  size_t n = (top <= 0 || top >= v) ? static_cast<size_t>(v) : static_cast<size_t>(top);
  auto better = [&](int32_t a, int32_t b) {
    return logprobs[a] != logprobs[b] ? logprobs[a] > logprobs[b] : a < b;
  };
  std::vector<int32_t> order;
  if (n <= 16) {
    // A few (predict's --top 1 in a keyboard): one pass keeping the n best in order, not a sort of V ids.
    order.reserve(n + 1);
    for (int32_t id = 0; id < v; ++id) {
      if (order.size() == n && !better(id, order.back())) continue;
      order.insert(std::upper_bound(order.begin(), order.end(), id, better), id);
      if (order.size() > n) order.pop_back();
    }
  } else {
    order.resize(static_cast<size_t>(v));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(n), order.end(), better);
  }
  std::vector<Candidate> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    int32_t id = order[i];
    out.push_back({id, model.vocab().token(id), std::exp(static_cast<double>(logprobs[id])), logprobs[id]});
  }
  return out;
}

namespace {

// A character model's completions of `prefix` after each context: the prefix's characters are fed after
// the context, then complete_chars ranks the continuations; each candidate is the whole word typed.
std::vector<Prediction> predict_char_prefix(Engine& engine, const std::vector<std::string>& contexts,
                                            const PredictOptions& opt, const std::string& source,
                                            uint64_t first_line) {
  const Model& model = engine.model();
  if (opt.window.windowed())
    throw UsageError(
        "--prefix on a character model feeds the typed characters to the state: it needs a "
        "stateful context, not --pad-to or --window");
  std::vector<Prediction> out(contexts.size());
  const auto typed = read_tokens(model, opt.prefix, false, opt.oov, LineRef{"--prefix", 1});
  for (size_t i = 0; i < contexts.size(); ++i) {
    out[i].ids = context_ids(model, contexts[i], opt, LineRef{source, first_line + i}, &out[i].skipped);
    for (const auto& t : typed)
      if (t.id >= 0) out[i].ids.push_back(t.id);
    std::vector<State> states{State::zeros(model)};
    MatrixRM lp;
    engine.predict({out[i].ids}, states, lp);
    std::vector<float> row(lp.row(0).data(), lp.row(0).data() + model.vocab_size());
    if (opt.boost) opt.boost->apply(out[i].ids, row.data(), model.vocab_size());
    out[i].top = complete_chars(engine, states[0], row, opt.top <= 0 ? 64 : opt.top);
    for (auto& c : out[i].top) c.token = opt.prefix + c.token;
  }
  return out;
}

}  // namespace

std::vector<Prediction> predict(Engine& engine, const std::vector<std::string>& contexts,
                                const PredictOptions& opt, const std::string& source, uint64_t first_line) {
  const Model& model = engine.model();
  opt.validate();
  const Completion how = model.tokenizer().traits().completion;
  if (how == Completion::CharBeam && !opt.prefix.empty()) {
    if (opt.cache.on())
      throw UsageError::option("cache_window",
                               ": not with " + UsageError::ref("prefix") + " on a character model");
    return predict_char_prefix(engine, contexts, opt, source, first_line);
  }
  check_completion(model, Completion::WordIndex, opt.prefix);
  std::shared_ptr<const Completer> completer = opt.completer;
  if (!opt.prefix.empty() && !completer) completer = Completer::of(model);
  std::vector<float> boosted;
  const bool from_start = opt.add_start && !opt.ids_input && start_token(model.tokenizer()) >= 0;
  // The ranked candidates of one row: mixed and boosted (history: the context's ids), then completions
  // or the top.
  auto rank = [&](const float* row, const std::vector<int32_t>& history) {
    if (opt.mix || opt.boost) {
      boosted.assign(row, row + model.vocab_size());
      if (opt.mix) opt.mix->apply(history, from_start, boosted.data());
      if (opt.boost) opt.boost->apply(history, boosted.data(), model.vocab_size());
      row = boosted.data();
    }
    return completer && !opt.prefix.empty() ? completer->complete(row, opt.prefix, opt.top)
                                            : top_candidates(model, row, opt.top);
  };
  std::vector<Prediction> out(contexts.size());
  for (size_t i = 0; i < contexts.size(); ++i)
    out[i].ids = context_ids(model, contexts[i], opt, LineRef{source, first_line + i}, &out[i].skipped);
  if (opt.window.windowed()) {
    WindowedPredictor wp(engine, opt.window, opt.batch_size, opt.pad_states);
    std::vector<std::span<const int32_t>> ctx;
    for (auto& p : out) ctx.emplace_back(p.ids);
    MatrixRM lp;
    wp.predict(ctx, lp);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].pads = wp.pads_before(out[i].ids);
      out[i].top = rank(lp.row(static_cast<Eigen::Index>(i)).data(), out[i].ids);
      auto win = wp.window_of(out[i].ids);
      std::vector<int32_t> kept(win.begin(), win.end());
      out[i].ids = std::move(kept);
    }
    return out;
  }

  const bool skip = opt.softmax == Softmax::Skip;
  if (opt.cache.on()) {  // each context through a cache of its own predictions, one at a time
    std::vector<State> states;
    MatrixRM lp;
    for (auto& p : out) {
      const NeuralCache cache = prefill_cache(engine, opt.cache, p.ids, states, lp);
      std::vector<float> row(lp.row(0).data(), lp.row(0).data() + model.vocab_size());
      cache.mix_row(states[0].h.back().data(), row.data(), row.size());
      p.top = rank(row.data(), p.ids);
    }
    return out;
  }

  std::vector<size_t> order(contexts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  longest_first(order, [&](size_t i) { return out[i].ids.size(); });
  size_t bs = static_cast<size_t>(std::max(1, opt.batch_size));
  MatrixRM logprobs;
  for (size_t b = 0; b < order.size(); b += bs) {
    size_t n = std::min(bs, order.size() - b);
    Sequences inputs(n);
    std::vector<State> states(n, State::zeros(model));
    for (size_t r = 0; r < n; ++r) inputs[r] = out[order[b + r]].ids;
    if (skip)
      engine.predict_logits(inputs, states, logprobs);
    else
      engine.predict(inputs, states, logprobs);
    for (size_t r = 0; r < n; ++r) {
      Prediction& p = out[order[b + r]];
      p.top = rank(logprobs.row(static_cast<Eigen::Index>(r)).data(), p.ids);
      if (!skip) continue;
      p.logits = true;
      for (auto& c : p.top) c.prob = std::numeric_limits<double>::quiet_NaN();
    }
  }
  return out;
}

}  // namespace lstmlm::tasks
