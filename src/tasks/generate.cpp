// generate: prompt -> context, one prefill, then the K samples stepped as one batch (docs/generation.md).
#include "lstmlm/tasks/generate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "engine/exact.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/input.hpp"
#include "tasks/steer.hpp"

namespace lstmlm::tasks {

std::vector<int32_t> GeneratedSample::ids() const {
  std::vector<int32_t> v;
  v.reserve(tokens.size());
  for (const auto& t : tokens) v.push_back(t.id);
  return v;
}

std::optional<int32_t> GenerateOptions::end_token(const Model& model) const {
  const std::optional<int32_t> eos = model.tokenizer().eos_id();
  if (eos && stop_at_eos.value_or(true)) return eos;
  return std::nullopt;
}

Prompt prompt_context(const Model& model, std::string_view prompt, tasks::OovPolicy oov, bool pad_window,
                      tasks::TokenBudget* budget) {
  const Tokenizer& tok = model.tokenizer();
  const bool chars = tok.traits().line_break_is_text;
  Prompt p;
  // What a line break becomes between two lines of the prompt.
  std::optional<Token> line_break;
  if (chars) {
    if (auto id = model.vocab().find("\n"))
      line_break = Token{*id, "\n", false};
    else if (tok.unk_id())
      line_break = Token{*tok.unk_id(), "\n", true};
    else
      line_break = Token{-1, "\n", true};
  } else if (tok.eos_id()) {
    line_break = Token{*tok.eos_id(), model.vocab().token(*tok.eos_id()), false};
  }
  size_t start = 0;
  for (bool first = true;; first = false) {
    size_t end = prompt.find('\n', start);
    std::string_view line =
        prompt.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!first && line_break) p.tokens.push_back(*line_break);
    std::vector<Token> toks;
    try {
      toks = tok.tokenize(line, tasks::kMaxLineTokens);
    } catch (const InputError& e) {
      throw InputError("prompt: " + e.message());
    }
    if (budget) budget->take(toks.size());
    for (auto& t : toks) p.tokens.push_back(std::move(t));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::vector<Token> fed;
  for (auto& t : p.tokens) {
    if (t.id >= 0) {
      fed.push_back(std::move(t));
      continue;
    }
    if (oov == tasks::OovPolicy::Error)
      throw InputError(
          "prompt: '" + t.text +
          "' is not in the vocabulary and the model has no unk_token (--oov skip skips such words)" +
          tasks::oov_hint(model, t.text));
    p.skipped.push_back(t.text);
  }
  p.tokens = std::move(fed);
  if (int32_t s = tasks::start_token(tok); s >= 0) p.context.push_back(s);
  for (const auto& t : p.tokens) p.context.push_back(t.id);
  if (p.context.empty() && !pad_window)
    throw InputError("prompt: empty, and the model has neither a bos_token nor an eos_token to start from");
  return p;
}

namespace {

// Whether the samples can be drawn class first, then word: a class-factored model sampled from its own
// distribution (temperature 1, no filter, penalty, bias, mixture, constraint, cache or window), whose joint
// p(class) p(word | class) needs no other class's words.
bool by_class(const Model& model, const GenerateOptions& o) {
  const SamplerParams& s = o.sampler;
  const bool penalty = s.repeat_penalty != 1.0f && s.repeat_last_n != 0;
  return model.config().classes > 0 && model.config().exact_path() && s.temperature == 1.0f && s.top_k == 0 &&
         s.top_p >= 1.0f && s.min_p == 0.0f && !penalty && !o.boost && !o.bias && !o.mix && !o.constraint &&
         !o.window.windowed() && !o.cache.on();
}

// One inverse-CDF draw u over the joint distribution in id order (classes hold contiguous words): the class
// whose mass holds u, then u's place within it over the class's words. The same token the full
// distribution's inverse CDF gives for u, up to rounding, from C + |class| output rows.
GeneratedToken draw_by_class(engine::ClassFactors& f, double u) {
  const std::vector<double>& pc = f.classes();
  double below = 0;
  int k = -1;
  for (size_t c = 0; c < pc.size(); ++c) {
    if (pc[c] <= 0) continue;
    k = static_cast<int>(c);
    if (u < below + pc[c]) break;
    below += pc[c];
  }
  if (k < 0) throw ModelError("sampler: the model gave no finite probability to any class");
  const std::vector<double>& pw = f.words(k);
  const double v = std::clamp((u - below) / pc[size_t(k)], 0.0, 1.0);
  double cum = 0;
  size_t j = pw.size();
  for (size_t i = 0; i < pw.size(); ++i) {
    if (pw[i] <= 0) continue;
    j = i;
    cum += pw[i];
    if (v < cum) break;
  }
  if (j == pw.size()) throw ModelError("sampler: the model gave no finite probability to a class's words");
  return {f.first_word(k) + static_cast<int32_t>(j), static_cast<float>(std::log(pc[size_t(k)] * pw[j]))};
}

GenerateResult generate_by_class(Engine& engine, const GenerateOptions& o, const TokenCallback& on_token) {
  const Model& model = engine.model();
  const std::optional<int32_t> eos = model.tokenizer().eos_id();
  const bool stop = o.stop_at_eos.value_or(eos.has_value()) && eos.has_value();
  GenerateResult r;
  r.prompt = prompt_context(model, o.prompt, o.oov, false, o.budget.get());
  std::vector<State> states{State::zeros(model)};
  engine.advance(Sequences{r.prompt.context}, states);
  const auto K = static_cast<size_t>(o.num_samples);
  r.samples.resize(K);
  states.resize(K, states.front());
  std::vector<Rng> rngs;
  std::vector<size_t> active;
  for (size_t i = 0; i < K; ++i) {
    r.samples[i].index = static_cast<int>(i);
    rngs.push_back(Rng::stream(o.seed, i));
    active.push_back(i);
  }
  std::vector<detail::TextTail> tails(o.stop.empty() ? 0 : K);
  engine::ClassFactors factors(model);
  Sequences next(K, std::vector<int32_t>(1));
  for (int step = 0; step < o.max_tokens && !active.empty(); ++step) {
    size_t kept = 0;
    for (size_t a = 0; a < active.size(); ++a) {
      const size_t i = active[a];
      factors.load(states[a]);
      const GeneratedToken t = draw_by_class(factors, rngs[i].uniform());
      GeneratedSample& s = r.samples[i];
      s.tokens.push_back(t);
      s.total_logprob += t.logprob;
      if (on_token) on_token(static_cast<int>(i), t);
      if (stop && t.id == *eos) {
        s.stopped_at_eos = true;
        continue;
      }
      if (!tails.empty() && tails[i].append(model.tokenizer(), t.id, o.stop, s.stopped_at)) continue;
      if (kept != a) {
        active[kept] = i;
        std::swap(states[kept], states[a]);
      }
      next[kept][0] = t.id;
      ++kept;
    }
    active.resize(kept);
    states.resize(kept);
    next.resize(kept);
    if (step + 1 < o.max_tokens && !active.empty()) engine.advance(next, states);
  }
  return r;
}

}  // namespace

GenerateResult generate(Engine& engine, const GenerateOptions& o, const TokenCallback& on_token) {
  const Model& model = engine.model();
  o.validate();
  if (by_class(model, o)) return generate_by_class(engine, o, on_token);
  const Sampler sampler(o.sampler);
  const std::optional<int32_t> eos = model.tokenizer().eos_id();
  const bool stop = o.stop_at_eos.value_or(eos.has_value()) && eos.has_value();

  GenerateResult r;
  r.prompt = prompt_context(model, o.prompt, o.oov, o.window.mode == tasks::WindowMode::Pad, o.budget.get());
  const auto V = static_cast<size_t>(model.vocab_size());
  std::optional<tasks::WindowedPredictor> windowed;
  if (o.window.windowed()) windowed.emplace(engine, o.window);

  // Prefill once; every sample starts from this state and this distribution.
  std::vector<State> states;
  MatrixRM lp;
  std::vector<NeuralCache> caches;
  if (o.cache.on())
    caches.assign(size_t(o.num_samples), prefill_cache(engine, o.cache, r.prompt.context, states, lp));
  else
    detail::prefill(engine, windowed, r.prompt.context, states, lp);

  const auto K = static_cast<size_t>(o.num_samples);
  r.samples.resize(K);
  // Repeat-penalty history: the prompt's own tokens (not the start token), then what each sample generates.
  std::vector<int32_t> prompt_ids;
  for (const auto& t : r.prompt.tokens) prompt_ids.push_back(t.id);
  std::vector<std::vector<int32_t>> history(K, prompt_ids);
  std::vector<Rng> rngs;
  for (size_t i = 0; i < K; ++i) {
    r.samples[i].index = static_cast<int>(i);
    rngs.push_back(Rng::stream(o.seed, i));
  }
  // Unfinished samples, in index order; `states` and the rows of `lp` follow this order after the first step.
  std::vector<size_t> active;
  for (size_t i = 0; i < K; ++i) active.push_back(i);
  states.resize(K, states.front());
  // Windowed: each sample's whole context (prompt + generated), the window cut from it at every step.
  std::vector<std::vector<int32_t>> contexts;
  if (windowed || o.mix) contexts.assign(K, r.prompt.context);
  const bool from_start = start_token(model.tokenizer()) >= 0;

  // Rows of the next step, reused: a finished sample's row is closed up in place (states swapped, not
  // copied), so a step allocates nothing.
  Sequences next(K, std::vector<int32_t>(1));
  std::vector<float> boosted, mixed, masked, cached;
  std::vector<int32_t> finish_row;
  // A constraint's cursor and the generated text per sample (stop strings, the constraint's messages).
  std::vector<int32_t> cursors(K, o.constraint ? o.constraint->start() : 0);
  std::vector<detail::TextTail> tails(o.constraint || !o.stop.empty() ? K : 0);
  for (int step = 0; step < o.max_tokens && !active.empty(); ++step) {
    size_t kept = 0;
    for (size_t a = 0; a < active.size(); ++a) {
      const size_t i = active[a];
      const float* row = lp.row(step == 0 ? 0 : static_cast<Eigen::Index>(a)).data();
      if (!caches
               .empty()) {  // the cache over this sample's history, queried with the output of its last step
        cached.assign(row, row + V);
        caches[i].mix_row(states[a].h.back().data(), cached.data(), V);
        row = cached.data();
      }
      if (o.mix) {  // the mixture is the model: its ln p is the token's
        mixed.assign(row, row + V);
        o.mix->apply(contexts[i], from_start, mixed.data());
        row = mixed.data();
      }
      std::span<const float> dist(row, V);
      std::span<const float> drawn = detail::steer(o, history[i], dist, boosted);
      Constraint::Row allowed;
      if (o.constraint) {
        allowed = o.constraint->row(cursors[i]);
        if (!allowed.any) {
          if (!allowed.accepting) detail::refuse_dead_end(o, step + 1, tails[i].text);
          continue;  // the text is complete: nothing may follow
        }
        // The last step a length limit allows takes only tokens that end in a match.
        if (step + 1 >= o.max_tokens || !allowed.all) {
          const int32_t* next = allowed.next;
          if (step + 1 >= o.max_tokens) {
            if (!o.constraint->finishing(cursors[i], finish_row)) detail::refuse_too_short(o, tails[i].text);
            next = finish_row.data();
          }
          masked.assign(drawn.begin(), drawn.end());
          for (size_t j = 0; j < V; ++j)
            if (next[j] < 0) masked[j] = -std::numeric_limits<float>::infinity();
          drawn = masked;
        }
      }
      int32_t id = sampler.sample(drawn, history[i], rngs[i]);
      GeneratedToken t{id, dist[static_cast<size_t>(id)]};
      GeneratedSample& s = r.samples[i];
      s.tokens.push_back(t);
      s.total_logprob += t.logprob;
      history[i].push_back(id);
      if (!caches.empty()) caches[i].push(states[a].h.back().data(), &id, 1);
      if (windowed || o.mix) contexts[i].push_back(id);
      if (on_token) on_token(static_cast<int>(i), t);
      if (o.constraint) cursors[i] = allowed.next[id];
      if (stop && id == *eos) {
        s.stopped_at_eos = true;
        continue;
      }
      if (!tails.empty() && tails[i].append(model.tokenizer(), id, o.stop, s.stopped_at)) continue;
      if (kept != a) {
        active[kept] = i;
        std::swap(states[kept], states[a]);
      }
      next[kept][0] = id;
      ++kept;
    }
    active.resize(kept);
    states.resize(kept);
    next.resize(kept);
    if (step + 1 >= o.max_tokens || active.empty()) continue;
    if (windowed) {
      std::vector<std::span<const int32_t>> rows;
      for (size_t i : active) rows.emplace_back(contexts[i]);
      windowed->predict(rows, lp);
    } else {
      engine.predict(next, states, lp);
    }
  }
  return r;
}

TextJoin::TextJoin(const Tokenizer& tok, std::string_view prompt) : tok_(&tok) {
  if (!prompt.empty()) prev_.emplace();
}

std::string TextJoin::piece(int32_t id) {
  if (id < 0 || id >= tok_->vocab().size()) {
    const int32_t one[] = {id};
    tok_->detokenize(one);  // throws the tokenizer's InputError for an id outside the vocabulary
  }
  if (tok_->is_special(id)) return "";
  const std::string& text = tok_->vocab().token(id);
  std::string p = tok_->join_text(prev_, text);
  prev_ = text;
  return p;
}

std::string sample_text(const Tokenizer& tok, std::string_view prompt, std::span<const int32_t> ids) {
  TextJoin join(tok, prompt);
  std::string out(prompt);
  for (int32_t id : ids) out += join.piece(id);
  return out;
}

}  // namespace lstmlm::tasks
