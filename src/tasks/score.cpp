#include "lstmlm/tasks/score.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/measures.hpp"
#include "lstmlm/error.hpp"
#include "tasks/score_lines.hpp"
#include "tasks/score_measures.hpp"

namespace lstmlm::tasks {

void ScoreSummary::add(const LineScore& l) {
  if (l.skipped) {
    ++skipped;
    return;
  }
  ++sentences;
  tokens += l.tokens;
  oovs += l.oovs;
  oov_tokens += l.oov_tokens;
  logprob += l.logprob;
  oov_logprob += l.oov_logprob;
  nonfinite += l.nonfinite;
}

void ScoreSummary::add(const ScoreSummary& o) {
  sentences += o.sentences;
  skipped += o.skipped;
  tokens += o.tokens;
  oovs += o.oovs;
  oov_tokens += o.oov_tokens;
  nonfinite += o.nonfinite;
  logprob += o.logprob;
  oov_logprob += o.oov_logprob;
}

double ScoreSummary::perplexity() const {
  if (tokens == 0) return std::numeric_limits<double>::quiet_NaN();
  return std::exp(-logprob / static_cast<double>(tokens));
}

double ScoreSummary::perplexity_excl_oov() const {
  if (tokens - oov_tokens == 0) return std::numeric_limits<double>::quiet_NaN();
  return std::exp(-(logprob - oov_logprob) / static_cast<double>(tokens - oov_tokens));
}

namespace {

// The id an OOV word is fed as (tokenizer.oov_input "zero": the one-hot model's zero input V), or -1 when
// OOV words are not fed. Not with fixed windows or the cache, which score every fed token.
int32_t zero_oov_id(const Model& model, const ScoreOptions& opt) {
  const ModelConfig& c = model.config();
  if (c.tokenizer.oov_input != OovInput::Zero || c.embedding_dim != 0 || opt.window.windowed() ||
      opt.cache.on())
    return -1;
  return model.vocab_size();
}

}  // namespace

Scorer::Scorer(Engine& engine, ScoreOptions opt) : engine_(&engine), opt_(opt) {
  opt_.validate();
  const TokenizerConfig& tok = engine.model().config().tokenizer;
  if (opt_.aggregate == Aggregate::Words && tokenizer_traits(tok.type).tokens_are_words)
    throw UsageError::option("aggregate", ": \"words\" needs a char or subword model; this is a word model");
  start_ = opt_.add_start ? start_token(engine.model().tokenizer()) : -1;
  doc_state_ = State::zeros(engine.model());
  doc_pending_ = start_;
  doc_context_ = start_ >= 0 ? 1 : 0;
  if (start_ >= 0) doc_history_.push_back(start_);
  if (opt_.cache.on()) cache_.emplace(opt_.cache, engine.model().config().layers.back().output_size());
}

std::vector<LineScore> Scorer::score(const std::vector<std::string>& lines, const std::string& source,
                                     uint64_t first_line, const std::vector<LineEnd>& ends) {
  const Model& model = engine_->model();
  std::vector<LineScore> out(lines.size());
  std::vector<std::vector<int32_t>> streams(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    out[i] = detail::tokenize_line(model, lines[i], opt_, LineRef{source, first_line + i},
                                   i < ends.size() ? ends[i] : LineEnd::Lf);
    if (!out[i].skipped) streams[i] = detail::fed_ids(out[i], zero_oov_id(model, opt_));
  }
  if (opt_.window.windowed())
    run_windowed(out, streams);
  else if (opt_.context == ContextMode::Sentence)
    run_sentences(out, streams);
  else
    run_document(out, streams);
  // Every fed token counts (a skipped OOV is not fed); sentence mode starts each line from the reset state.
  const bool document = opt_.context == ContextMode::Document;
  for (auto& l : out) {
    int64_t line_context = start_ >= 0 ? 1 : 0;
    int64_t& context = document ? doc_context_ : line_context;
    for (auto& w : l.words) {
      w.context = context;
      if (w.id >= 0) ++context;
    }
  }
  if (opt_.aggregate == Aggregate::Words) {
    for (auto& l : out) {
      if (l.skipped) continue;
      if (model.config().tokenizer.subword())
        detail::aggregate_pieces(l, model.tokenizer());
      else
        detail::aggregate_words(l);
    }
  }
  return out;
}

void Scorer::run_sentences(std::vector<LineScore>& out, const std::vector<std::vector<int32_t>>& streams) {
  const Model& model = engine_->model();
  std::vector<size_t> order;
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].skipped && !streams[i].empty()) order.push_back(i);
  longest_first(order, [&](size_t i) { return streams[i].size(); });
  size_t bs = static_cast<size_t>(std::max(1, opt_.batch_size));
  Sequences inputs, targets;
  std::vector<std::vector<float>> lp, entropy;
  std::vector<std::vector<int32_t>> rank;
  std::vector<std::vector<float>> top;
  std::vector<std::vector<double>> lp64;
  const StepMeasures measures{opt_.entropy ? &entropy : nullptr, opt_.rank ? &rank : nullptr,
                              cache_ ? &top : nullptr, &lp64, opt_.softmax == Softmax::Skip};
  const bool zero_oov = zero_oov_id(model, opt_) >= 0;
  for (size_t b = 0; b < order.size(); b += bs) {
    size_t n = std::min(bs, order.size() - b);
    inputs.assign(n, {});
    targets.assign(n, {});
    for (size_t r = 0; r < n; ++r) detail::sentence_row(streams[order[b + r]], start_, inputs[r], targets[r]);
    std::vector<State> states(n, State::zeros(model));
    engine_->score(inputs, targets, states, lp, measures);
    for (size_t r = 0; r < n; ++r) {
      LineScore& l = out[order[b + r]];
      detail::fill_line(l, lp64[r].data(), start_ < 0, opt_.entropy ? entropy[r].data() : nullptr,
                        opt_.rank ? rank[r].data() : nullptr, zero_oov);
    }
  }
}

void Scorer::run_document(std::vector<LineScore>& out, const std::vector<std::vector<int32_t>>& streams) {
  // One row: the pending token (the last of the previous block, or the start token) is fed first.
  std::vector<int32_t> all;
  for (size_t i = 0; i < out.size(); ++i) all.insert(all.end(), streams[i].begin(), streams[i].end());
  std::vector<double> lp_all;
  std::vector<float> entropy_all;
  std::vector<int32_t> rank_all;
  lp_all.reserve(all.size());
  size_t pos = 0;
  bool first_is_context = false;
  if (doc_pending_ < 0 && !all.empty()) {  // no start token: the stream's first token is context only
    first_is_context = true;
    doc_pending_ = all[0];
    pos = 1;
  }
  // Chunks bound the engine's per-call memory; the state carries across them.
  const size_t chunk = 8192;
  Sequences inputs(1), targets(1);
  std::vector<State> states{doc_state_};
  std::vector<std::vector<float>> lp, entropy;
  std::vector<std::vector<int32_t>> rank;
  std::vector<std::vector<float>> top;
  std::vector<std::vector<double>> lp64;
  const StepMeasures measures{opt_.entropy ? &entropy : nullptr, opt_.rank ? &rank : nullptr,
                              cache_ ? &top : nullptr, &lp64, opt_.softmax == Softmax::Skip};
  while (pos < all.size()) {
    size_t n = std::min(chunk, all.size() - pos);
    detail::stream_row(doc_pending_, std::span<const int32_t>(all).subspan(pos, n), inputs[0], targets[0]);
    engine_->score(inputs, targets, states, lp, measures);
    if (cache_) {  // each step's score through the cache, from the top layer's output it was decoded from
      cache_->score(top[0].data(), lp[0].data(), targets[0].data(), n, lp[0].data());
      lp_all.insert(lp_all.end(), lp[0].begin(), lp[0].end());
    } else {
      lp_all.insert(lp_all.end(), lp64[0].begin(), lp64[0].end());
    }
    if (opt_.entropy) entropy_all.insert(entropy_all.end(), entropy[0].begin(), entropy[0].end());
    if (opt_.rank) rank_all.insert(rank_all.end(), rank[0].begin(), rank[0].end());
    doc_pending_ = all[pos + n - 1];
    pos += n;
  }
  doc_state_ = states[0];
  // lp_all has no entry for the context-only token: the line that holds it gets one value fewer.
  size_t k = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    bool context = first_is_context && !streams[i].empty();
    detail::fill_line(out[i], lp_all.data() + k, context, opt_.entropy ? entropy_all.data() + k : nullptr,
                      opt_.rank ? rank_all.data() + k : nullptr, zero_oov_id(engine_->model(), opt_) >= 0);
    k += streams[i].size() - (context ? 1 : 0);
    if (context) first_is_context = false;
  }
}

void Scorer::run_windowed(std::vector<LineScore>& out, const std::vector<std::vector<int32_t>>& streams) {
  const int V = engine_->model().vocab_size();
  const bool doc = opt_.context == ContextMode::Document;
  detail::WindowRows w = detail::window_rows({streams.begin(), streams.end()}, doc, start_, doc_history_);
  const auto& rows = w.rows;
  const auto& targets = w.targets;
  // Chunks of rows bound the [rows, V] log-prob matrix; the predictor batches each chunk.
  std::vector<float> lp(rows.size()), entropy(opt_.entropy ? rows.size() : 0);
  std::vector<int32_t> rank(opt_.rank ? rows.size() : 0);
  WindowedPredictor wp(*engine_, opt_.window, opt_.batch_size);
  const size_t chunk = 1024;
  MatrixRM dist;
  for (size_t b = 0; b < rows.size(); b += chunk) {
    const size_t n = std::min(chunk, rows.size() - b);
    std::vector<std::span<const int32_t>> part(rows.begin() + static_cast<ptrdiff_t>(b),
                                               rows.begin() + static_cast<ptrdiff_t>(b + n));
    wp.predict(part, dist);
    for (size_t r = 0; r < n; ++r) {
      const float* z = dist.row(static_cast<Eigen::Index>(r)).data();
      const float v = z[targets[b + r]];
      lp[b + r] = v;
      if (opt_.entropy) entropy[b + r] = engine::entropy_nats(z, 0.0f, 0.0f, V);
      if (opt_.rank) rank[b + r] = engine::rank_of(z, v, V);
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].skipped) continue;
    const size_t f = w.first_row[i];
    detail::fill_line(out[i], lp.data() + f, w.first_is_context[i],
                      opt_.entropy ? entropy.data() + f : nullptr, opt_.rank ? rank.data() + f : nullptr);
  }
  if (doc) detail::keep_history(w, opt_.window.length, doc_history_);
}

}  // namespace lstmlm::tasks
