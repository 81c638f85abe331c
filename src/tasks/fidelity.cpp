#include "lstmlm/tasks/fidelity.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lstmlm/error.hpp"
#include "tasks/score_lines.hpp"

namespace lstmlm::tasks {

namespace {

// Floats of one engine's [steps, V] log-prob rows per call: chunks of steps keep both engines' rows
// within this (16 MiB each), whatever the vocabulary and line lengths. The engine is chunk-invariant.
constexpr size_t kRowBudget = size_t{1} << 22;

// The ids of history a mixture's rows are given: past any n-gram order (each model reads its order - 1).
constexpr size_t kMixHistory = 64;

}  // namespace

double kl_divergence(std::span<const float> logp, std::span<const float> logq) {
  double s = 0;
  for (size_t v = 0; v < logp.size(); ++v) {
    const double a = logp[v];
    if (a == -std::numeric_limits<double>::infinity()) continue;  // p_v = 0: the term is 0
    s += std::exp(a) * (a - static_cast<double>(logq[v]));
  }
  return s;
}

int32_t argmax(std::span<const float> row) {
  if (row.empty()) return -1;
  size_t best = 0;
  for (size_t v = 1; v < row.size(); ++v)
    if (row[v] > row[best]) best = v;
  return static_cast<int32_t>(best);
}

TokenFidelity compare_rows(std::span<const float> logp, std::span<const float> logq, int32_t target) {
  TokenFidelity f;
  f.kl = kl_divergence(logp, logq);
  const auto t = static_cast<size_t>(target);
  f.dlogp = std::fabs(static_cast<double>(logp[t]) - static_cast<double>(logq[t]));
  f.top1 = argmax(logp) == argmax(logq);
  return f;
}

double FidelityResult::mean_kl() const {
  if (tokens == 0) return std::numeric_limits<double>::quiet_NaN();
  return kl_sum / static_cast<double>(tokens);
}

double FidelityResult::top1_agreement() const {
  if (tokens == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(top1_agree) / static_cast<double>(tokens);
}

double FidelityResult::relative_delta_ppl() const {
  const double a = perplexity_ref(), b = perplexity_low();
  return (b - a) / a;
}

// One input line: its records on each side, the target log-probs in order and its comparison totals.
struct Fidelity::Line {
  LineScore ref, low;
  std::vector<int32_t> ids;  // the fed ids
  bool first_is_context = false;
  std::vector<float> lp_ref, lp_low;
  double kl_sum = 0, kl_max = 0, dlogp_max = 0;
  int64_t tokens = 0, top1 = 0;
};

Fidelity::Fidelity(Engine& reference, Engine& low, ScoreOptions opt, std::shared_ptr<const MixRow> mix)
    : ref_(&reference), low_(&low), opt_(opt), mix_(std::move(mix)) {
  if (&reference.model() != &low.model())
    throw UsageError("fidelity: the reference and the low-precision engine must run the same model");
  if (opt_.entropy || opt_.rank || opt_.aggregate == Aggregate::Words)
    throw UsageError("fidelity: entropy, rank and word aggregation do not apply");
  opt_.validate();
  start_ = start_token(reference.model().tokenizer());
  doc_ref_ = State::zeros(reference.model());
  doc_low_ = doc_ref_;
  doc_pending_ = start_;
  if (start_ >= 0) doc_history_.push_back(start_);
  r_.kernels_ref = std::string(reference.kernels());
  r_.kernels_low = std::string(low.kernels());
}

void Fidelity::add(const std::vector<std::string>& lines, const std::string& source, uint64_t first_line,
                   const std::vector<LineEnd>& ends) {
  const Model& model = ref_->model();
  std::vector<Line> out(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    out[i].ref = detail::tokenize_line(model, lines[i], opt_, LineRef{source, first_line + i},
                                       i < ends.size() ? ends[i] : LineEnd::Lf);
    if (!out[i].ref.skipped) out[i].ids = detail::fed_ids(out[i].ref);
    out[i].low = out[i].ref;
  }
  if (opt_.window.windowed())
    run_windowed(out);
  else if (opt_.context == ContextMode::Sentence)
    run_sentences(out);
  else
    run_document(out);
  // Totals line by line, in input order: the same sums whatever the batches were.
  for (Line& l : out) {
    if (!l.ref.skipped) {
      detail::fill_line(l.ref, l.lp_ref.data(), l.first_is_context);
      detail::fill_line(l.low, l.lp_low.data(), l.first_is_context);
    }
    r_.ref.add(l.ref);
    r_.low.add(l.low);
    r_.tokens += l.tokens;
    r_.top1_agree += l.top1;
    r_.kl_sum += l.kl_sum;
    if (!(l.kl_max <= r_.kl_max)) r_.kl_max = l.kl_max;  // a NaN stays (std::max would drop it)
    if (!(l.dlogp_max <= r_.dlogp_max)) r_.dlogp_max = l.dlogp_max;
  }
}

void Fidelity::mix_rows(std::span<const int32_t> history, float* p, float* q) const {
  if (!mix_) return;
  const bool from_start = start_ >= 0 && !history.empty() && history.front() == start_;
  mix_->apply(history, from_start, p);
  mix_->apply(history, from_start, q);
}

void Fidelity::compare(Line& l, const float* p, const float* q, int32_t target) {
  const auto V = static_cast<size_t>(ref_->model().vocab_size());
  const TokenFidelity f = compare_rows({p, V}, {q, V}, target);
  l.lp_ref.push_back(p[target]);
  l.lp_low.push_back(q[target]);
  ++l.tokens;
  l.kl_sum += f.kl;
  // max() would drop a NaN; a NaN divergence must show in the maximum.
  if (!(f.kl <= l.kl_max)) l.kl_max = f.kl;
  if (!(f.dlogp <= l.dlogp_max)) l.dlogp_max = f.dlogp;
  l.top1 += f.top1 ? 1 : 0;
}

// Rows of inputs and targets through both engines in chunks of steps (states carried), every step's two
// distributions compared into its line, owners[offset of row r + t]. With a mixture, row r's history at step
// t is `before` (the ids fed ahead of these rows: document mode) and its inputs up to t.
void Fidelity::run_rows(std::vector<Line>& lines, const std::vector<size_t>& owners, const Sequences& inputs,
                        const Sequences& targets, std::vector<State>& sref, std::vector<State>& slow,
                        const std::vector<int32_t>& before) {
  // owners: the owner of row r's step t at offset[r] + t.
  std::vector<size_t> offset(inputs.size() + 1, 0);
  size_t longest = 0;
  for (size_t r = 0; r < inputs.size(); ++r) {
    offset[r + 1] = offset[r] + inputs[r].size();
    longest = std::max(longest, inputs[r].size());
  }
  const auto V = static_cast<size_t>(ref_->model().vocab_size());
  const size_t T = std::max<size_t>(1, kRowBudget / std::max<size_t>(1, inputs.size() * V));
  Sequences part(inputs.size());
  std::vector<MatrixRM> pr, pl;
  for (size_t t0 = 0; t0 < longest; t0 += T) {
    for (size_t r = 0; r < inputs.size(); ++r) {
      const size_t a = std::min(t0, inputs[r].size()), b = std::min(t0 + T, inputs[r].size());
      part[r].assign(inputs[r].begin() + static_cast<ptrdiff_t>(a),
                     inputs[r].begin() + static_cast<ptrdiff_t>(b));
    }
    ref_->logprobs(part, sref, pr);
    low_->logprobs(part, slow, pl);
    std::vector<int32_t> history;
    for (size_t r = 0; r < inputs.size(); ++r)
      for (size_t t = 0; t < part[r].size(); ++t) {
        const auto row = static_cast<Eigen::Index>(t);
        if (mix_) {
          // Only the last ids reach an n-gram model (kMixHistory is past any order): a long row's tail is
          // passed as it is; a short one is put after the ids fed before it.
          const size_t fed = t0 + t + 1;
          std::span<const int32_t> h(inputs[r].data(), fed);
          if (fed < kMixHistory && !before.empty()) {
            history.assign(before.end() - std::ptrdiff_t(std::min(before.size(), kMixHistory - fed)),
                           before.end());
            history.insert(history.end(), inputs[r].begin(), inputs[r].begin() + std::ptrdiff_t(fed));
            h = history;
          } else if (fed > kMixHistory) {
            h = h.subspan(fed - kMixHistory);
          }
          mix_rows(h, pr[r].row(row).data(), pl[r].row(row).data());
        }
        compare(lines[owners[offset[r] + t0 + t]], pr[r].row(row).data(), pl[r].row(row).data(),
                targets[r][t0 + t]);
      }
  }
}

void Fidelity::run_sentences(std::vector<Line>& lines) {
  // As Scorer::run_sentences (detail::sentence_row).
  const Model& model = ref_->model();
  std::vector<size_t> order;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (start_ < 0) lines[i].first_is_context = true;
    if (!lines[i].ref.skipped && !lines[i].ids.empty()) order.push_back(i);
  }
  longest_first(order, [&](size_t i) { return lines[i].ids.size(); });
  const size_t bs = static_cast<size_t>(std::max(1, opt_.batch_size));
  Sequences inputs, targets;
  std::vector<size_t> owners;
  for (size_t b = 0; b < order.size(); b += bs) {
    const size_t n = std::min(bs, order.size() - b);
    inputs.assign(n, {});
    targets.assign(n, {});
    owners.clear();
    for (size_t r = 0; r < n; ++r) {
      detail::sentence_row(lines[order[b + r]].ids, start_, inputs[r], targets[r]);
      owners.insert(owners.end(), inputs[r].size(), order[b + r]);
    }
    std::vector<State> sref(n, State::zeros(model)), slow(n, State::zeros(model));
    run_rows(lines, owners, inputs, targets, sref, slow);
  }
}

void Fidelity::run_document(std::vector<Line>& lines) {
  // As Scorer::run_document: one stream, the pending token (the start token, or the last token of the
  // previous block) fed first, the states carried to the next call.
  std::vector<int32_t> all;
  std::vector<size_t> owner_of;  // per token of `all`: its line
  for (size_t i = 0; i < lines.size(); ++i) {
    all.insert(all.end(), lines[i].ids.begin(), lines[i].ids.end());
    owner_of.insert(owner_of.end(), lines[i].ids.size(), i);
  }
  if (all.empty()) return;
  size_t pos = 0;
  if (doc_pending_ < 0) {  // no start token: the stream's first token is context only
    lines[owner_of[0]].first_is_context = true;
    doc_pending_ = all[0];
    pos = 1;
    if (all.size() == 1) return;  // nothing after it yet: it stays pending
  }
  Sequences inputs(1), targets(1);
  detail::stream_row(doc_pending_, std::span<const int32_t>(all).subspan(pos), inputs[0], targets[0]);
  std::vector<size_t> owners(owner_of.begin() + static_cast<ptrdiff_t>(pos), owner_of.end());
  std::vector<State> sref{doc_ref_}, slow{doc_low_};
  run_rows(lines, owners, inputs, targets, sref, slow, doc_fed_);
  doc_ref_ = sref[0];
  doc_low_ = slow[0];
  doc_pending_ = all.back();
  if (mix_) {  // the n-grams' history: what was fed, the start token first while it is within reach
    doc_fed_.insert(doc_fed_.end(), inputs[0].begin(), inputs[0].end());
    if (doc_fed_.size() > 2 * kMixHistory)
      doc_fed_.erase(doc_fed_.begin(), doc_fed_.end() - std::ptrdiff_t(kMixHistory));
  }
}

void Fidelity::run_windowed(std::vector<Line>& lines) {
  // As Scorer::run_windowed: every scored token is one row, its context the stream before it (the line's
  // in sentence mode, the whole stream's in document mode), cut to the window by the predictor.
  const size_t V = static_cast<size_t>(ref_->model().vocab_size());
  const bool doc = opt_.context == ContextMode::Document;
  std::vector<std::span<const int32_t>> ids;
  for (const auto& l : lines) ids.emplace_back(l.ids);
  detail::WindowRows w = detail::window_rows(ids, doc, start_, doc_history_);
  std::vector<size_t> owners(w.rows.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (w.first_is_context[i]) lines[i].first_is_context = true;
    const size_t end = i + 1 < lines.size() ? w.first_row[i + 1] : w.rows.size();
    std::fill(owners.begin() + static_cast<ptrdiff_t>(w.first_row[i]),
              owners.begin() + static_cast<ptrdiff_t>(end), i);
  }
  const auto& rows = w.rows;
  const auto& targets = w.targets;
  WindowedPredictor wr(*ref_, opt_.window, opt_.batch_size), wl(*low_, opt_.window, opt_.batch_size);
  const size_t chunk = std::max<size_t>(1, std::min<size_t>(1024, kRowBudget / V));
  MatrixRM dr, dl;
  for (size_t b = 0; b < rows.size(); b += chunk) {
    const size_t n = std::min(chunk, rows.size() - b);
    const std::vector<std::span<const int32_t>> part(rows.begin() + static_cast<ptrdiff_t>(b),
                                                     rows.begin() + static_cast<ptrdiff_t>(b + n));
    wr.predict(part, dr);
    wl.predict(part, dl);
    for (size_t r = 0; r < n; ++r) {
      const auto row = static_cast<Eigen::Index>(r);
      mix_rows(part[r], dr.row(row).data(), dl.row(row).data());
      compare(lines[owners[b + r]], dr.row(row).data(), dl.row(row).data(), targets[b + r]);
    }
  }
  if (doc) detail::keep_history(w, opt_.window.length, doc_history_);
}

}  // namespace lstmlm::tasks
