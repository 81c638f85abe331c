#include "lstmlm/tasks/rescore.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"
#include "lstmlm/units.hpp"
#include "tasks/score_lines.hpp"

namespace lstmlm::tasks {

namespace {

double to_ln(double v, LogUnits u) {
  switch (u) {
    case LogUnits::Log10:
      return v * kLn10;
    case LogUnits::Ln:
      return v;
    case LogUnits::Cost:
      return -v;
  }
  return v;
}

// ln(e^a + e^b), exact when one side is -inf (lambda 0 or 1).
double log_add(double a, double b) {
  const double hi = std::max(a, b), lo = std::min(a, b);
  if (hi == -std::numeric_limits<double>::infinity()) return hi;
  return hi + std::log1p(std::exp(lo - hi));
}

// The best of [begin, end): the highest combined score, the first on a tie; NaN never wins over a number.
void mark_best(std::vector<HypothesisScore>& s, size_t begin, size_t end) {
  size_t best = begin;
  for (size_t i = begin + 1; i < end; ++i)
    if (s[i].combined > s[best].combined || (std::isnan(s[best].combined) && !std::isnan(s[i].combined)))
      best = i;
  if (best < end) s[best].best = true;
}

size_t utterance_end(const std::vector<Hypothesis>& hyps, size_t b) {
  size_t e = b + 1;
  while (e < hyps.size() && hyps[e].utt == hyps[b].utt) ++e;
  return e;
}

}  // namespace

Rescorer::Rescorer(Engine& engine, RescoreOptions opt, Engine* backward)
    : engine_(&engine), prefix_(engine, opt.score), opt_(std::move(opt)), backward_(backward) {
  opt_.score.skip_empty = false;  // an empty hypothesis is a hypothesis: scored as just eos
  if (backward_) {
    if (!(opt_.backward_weight >= 0 && opt_.backward_weight <= 1))
      throw UsageError::option("backward_weight",
                               " must be in [0, 1], got " + std::to_string(opt_.backward_weight));
    if (opt_.conversation)
      throw UsageError::option("backward_model", ": reads each utterance from its end, not with " +
                                                     UsageError::ref("context") + " conversation");
    if (opt_.score.reverse)
      throw UsageError::option("reverse", ": the -m model is the forward one when " +
                                              UsageError::ref("backward_model") + " is given");
    ScoreOptions b = opt_.score;
    b.reverse = true;
    backward_prefix_.emplace(*backward_, b);
  }
  if (opt_.mix && opt_.score.reverse)
    throw UsageError::option("reverse", ": not with " + UsageError::ref("mix") +
                                            " (the n-gram models read a hypothesis left to right)");
  if (opt_.mix) {
    const Model& m = engine.model();
    require_word_model(m);
    if (opt_.mix->mode == MixMode::LogLinear && opt_.conversation)
      throw UsageError::option("mix_mode",
                               " loglinear: each hypothesis from <s>, not with --context conversation");
    mix_.emplace(opt_.mix, opt_.score, &m);  // its context is sentence: each hypothesis from <s>
  }
}

void Rescorer::combine(const Hypothesis& h, HypothesisScore& s, const std::string& source) const {
  s.lm_logprob = s.lm.logprob;
  if (opt_.interpolate) {
    const auto& ip = *opt_.interpolate;
    const auto& ng = h.scores.at(ip.score);
    const double a = std::log(ip.lambda), b = std::log1p(-ip.lambda);
    if (ng.size() == 1) {  // per sentence: the two probabilities of the whole hypothesis
      s.lm_logprob = log_add(a + s.lm.logprob, b + to_ln(ng[0], ip.units));
    } else {  // per token: one n-gram value per scored token, in order, eos included
      if (int64_t(ng.size()) != s.lm.tokens)
        throw LineRef{source, h.line}.error(
            "the n-gram score has " + std::to_string(ng.size()) +
            " per-token values but the hypothesis has " + std::to_string(s.lm.tokens) +
            " scored tokens (eos included); give one value per token or one for the hypothesis");
      double sum = 0;
      size_t k = 0;
      for (const auto& w : s.lm.words)
        if (w.scored) sum += log_add(a + double(w.logprob), b + to_ln(ng[k++], ip.units));
      s.lm_logprob = sum;
    }
  }
  s.lm_forward = s.lm_logprob;
  if (backward_)
    s.lm_logprob = (1 - opt_.backward_weight) * s.lm_forward + opt_.backward_weight * s.backward_logprob;
  for (const auto& w : s.lm.words) s.words += w.eos ? 0 : 1;
  double c = opt_.lm_weight * s.lm_logprob + opt_.word_penalty * double(s.words);
  for (size_t k = 0; k < opt_.weights.size() && k < h.scores.size(); ++k) {
    if (opt_.weights[k] == 0) continue;  // printed only: a per-token list need not be summed
    double v = 0;
    for (double x : h.scores[k]) v += x;
    c += opt_.weights[k] * v;
  }
  s.combined = c;
}

void Rescorer::run(const std::vector<Hypothesis>& hyps, std::vector<HypothesisScore>& out, size_t begin,
                   size_t end, const StreamStart& from, const std::string& source) {
  // Moved out of `out` and back, so that one tree is built over all of [begin, end).
  std::vector<LineScore> lines;
  lines.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) lines.push_back(std::move(out[i].lm));
  prefix_.score_tokenized(lines, from);
  if (mix_) mix_->mix(lines, engine_);
  if (backward_) {  // each hypothesis reversed, by the backward model's own vocabulary, from its sentence
                    // start
    ScoreOptions b = opt_.score;
    b.reverse = true;
    std::vector<LineScore> back;
    back.reserve(end - begin);
    for (size_t i = begin; i < end; ++i)
      back.push_back(
          detail::tokenize_line(backward_->model(), hyps[i].text, b, LineRef{source, hyps[i].line}));
    backward_prefix_->score_tokenized(back, backward_prefix_->sentence_start());
    for (size_t i = begin; i < end; ++i) out[i].backward_logprob = back[i - begin].logprob;
  }
  for (size_t i = begin; i < end; ++i) {
    out[i].lm = std::move(lines[i - begin]);
    combine(hyps[i], out[i], source);
  }
}

// The recording as the user wrote it: the reader prefixes it with its source and a line feed.
static std::string recording_shown(const std::string& r) {
  const size_t nl = r.rfind('\n');
  return "'" + printable(nl == std::string::npos ? r : r.substr(nl + 1), 200) + "'";
}

std::vector<std::string> Rescorer::check(const std::vector<Hypothesis>& hyps,
                                         const std::string& source) const {
  std::unordered_set<std::string_view> ended_here;  // recordings this call ends
  std::string_view current = recording_;
  std::unordered_set<std::string_view> ids;
  for (size_t b = 0, e; b < hyps.size(); b = e) {
    e = utterance_end(hyps, b);
    ids.clear();
    for (size_t i = b; i < e; ++i)
      if (!hyps[i].id.empty() && !ids.insert(hyps[i].id).second)
        throw LineRef{source, hyps[i].line}.error(
            "hypothesis id '" + printable(hyps[i].id, 200) + "' appears twice in utterance '" +
            printable(hyps[i].utt, 200) + "': each hypothesis of an utterance needs its own id");
    if (!opt_.conversation || hyps[b].recording == current) continue;
    const std::string& r = hyps[b].recording;
    if (ended_.count(r) || ended_here.count(r))
      throw LineRef{source, hyps[b].line}.error(
          "recording " + recording_shown(r) +
          " comes back after other recordings: with --context conversation the utterances of a "
          "recording must be contiguous (sort the list by recording, keeping the order within each)");
    if (!current.empty()) ended_here.insert(current);
    current = r;
  }
  return {ended_here.begin(), ended_here.end()};
}

std::vector<HypothesisScore> Rescorer::rescore(const std::vector<Hypothesis>& hyps,
                                               const std::string& source) {
  std::vector<std::string> ended = check(hyps, source);
  std::vector<HypothesisScore> out(hyps.size());
  for (size_t i = 0; i < hyps.size(); ++i)
    out[i].lm =
        detail::tokenize_line(engine_->model(), hyps[i].text, opt_.score, LineRef{source, hyps[i].line});
  if (!opt_.conversation) {
    // Every utterance from the sentence start: one tree over all of them, their branches batched together.
    run(hyps, out, 0, hyps.size(), prefix_.sentence_start(), source);
    for (size_t b = 0, e; b < hyps.size(); b = e) mark_best(out, b, e = utterance_end(hyps, b));
    return out;
  }
  // A hypothesis that throws leaves the context as it was before the call (strong guarantee), so that
  // the caller can score the utterances before it again, one by one.
  const auto saved_carried = carried_;
  const auto saved_recording = recording_;
  try {
    for (size_t b = 0, e; b < hyps.size(); b = e) {
      e = utterance_end(hyps, b);
      if (!carried_ || hyps[b].recording != recording_) carried_ = prefix_.sentence_start();
      recording_ = hyps[b].recording;
      run(hyps, out, b, e, *carried_, source);
      mark_best(out, b, e);
      for (size_t i = b; i < e; ++i)
        if (out[i].best) carried_ = prefix_.after(*carried_, out[i].lm);
    }
  } catch (...) {
    carried_ = saved_carried;
    recording_ = saved_recording;
    throw;
  }
  for (auto& r : ended) ended_.insert(std::move(r));
  return out;
}

}  // namespace lstmlm::tasks
