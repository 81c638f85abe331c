#include "lstmlm/tasks/mix.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/units.hpp"

namespace lstmlm::tasks {

MixMember parse_mix(std::string_view spec) {
  const size_t colon = spec.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == spec.size())
    throw UsageError::option(
        "mix",
        ": expected MODEL:WEIGHT (an ARPA file and its weight, e.g. lm.arpa:0.3), got " + quoted_word(spec));
  MixMember m;
  m.path = std::string(spec.substr(0, colon));
  const std::string_view w = spec.substr(colon + 1);
  const auto r = std::from_chars(w.data(), w.data() + w.size(), m.weight);
  if (r.ec != std::errc() || r.ptr != w.data() + w.size() || !std::isfinite(m.weight))
    throw UsageError::option(
        "mix", ": the weight " + quoted_word(w) + " of " + quoted_word(m.path) + " is not a number");
  return m;
}

void check_mix_weights(const std::vector<MixMember>& members, bool lodr) {
  double sum = 0;
  for (const auto& m : members) {
    const bool ok = (m.weight > 0 && m.weight <= 1) || (lodr && m.weight >= -1 && m.weight < 0);
    if (!ok)
      throw UsageError::option("mix", ": the weight of " + quoted_word(m.path) + " must be in " +
                                          (lodr ? "[-1, 0) (LODR) or (0, 1]" : "(0, 1]") + ", got " +
                                          std::to_string(m.weight));
    if (m.weight > 0) sum += m.weight;
  }
  if (sum > 1 + 1e-12)
    throw UsageError::option("mix", ": the weights sum to " + std::to_string(sum) +
                                        ", above 1 (the first model gets 1 - their sum)");
}

std::shared_ptr<const MixPlan> load_mix(const std::vector<std::string>& specs,
                                        const std::vector<std::string>& first_words, bool lodr,
                                        MixMode mode) {
  std::vector<MixMember> members;
  for (const auto& spec : specs) members.push_back(parse_mix(spec));
  check_mix_weights(members, lodr && mode == MixMode::Linear);
  std::vector<std::shared_ptr<const NgramModel>> models;
  std::vector<double> weights;
  for (const auto& m : members) {
    if (::access(m.path.c_str(), R_OK) != 0)
      throw UsageError::option("mix", " " + m.path + ": cannot open: " + std::strerror(errno));
    if (!NgramModel::is_arpa(m.path))
      throw UsageError::option(
          "mix", " " + m.path + ": not an ARPA n-gram model (the models mixed in are ARPA files)");
    models.push_back(NgramModel::load(m.path));
    weights.push_back(m.weight);
  }
  auto plan = std::make_shared<MixPlan>(std::move(models), std::move(weights), first_words);
  plan->mode = mode;
  return plan;
}

void require_word_model(const Model& first) {
  if (!first.tokenizer().traits().tokens_are_words)
    throw UsageError::option("mix",
                             std::string(": needs a word model (an n-gram model scores words); this one "
                                         "has ") +
                                 first.tokenizer().traits().name + " tokens");
}

std::vector<std::string> NgramMix::words_of(const Model& model) {
  require_word_model(model);
  const Vocab& v = model.vocab();
  const auto unk = model.tokenizer().unk_id();
  const auto eos = model.tokenizer().eos_id();
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(v.size()));
  for (int32_t i = 0; i < v.size(); ++i) {
    if (unk && i == *unk) continue;
    out.push_back(eos && i == *eos ? std::string("</s>") : v.token(i));
  }
  return out;
}

std::vector<std::string> NgramMix::words_of(const NgramModel& model) {
  std::vector<std::string> out;
  for (uint32_t i = 0; i < model.vocab_size(); ++i)
    if (i != model.unk() && i != model.bos()) out.push_back(model.word(i));
  return out;
}

MixPlan::MixPlan(std::vector<std::shared_ptr<const NgramModel>> models, std::vector<double> weights,
                 const std::vector<std::string>& first_words) {
  std::unordered_set<std::string_view> all(first_words.begin(), first_words.end());
  for (const auto& m : models)
    for (uint32_t i = 0; i < m->vocab_size(); ++i)
      if (i != m->unk() && i != m->bos()) all.insert(m->word(i));
  const double union_size = static_cast<double>(all.size());
  const std::unordered_set<std::string_view> first(first_words.begin(), first_words.end());
  first_unk_share = 1.0 / (union_size - static_cast<double>(first.size()) + 1);
  double sum = 0;
  for (size_t i = 0; i < models.size(); ++i) {
    const auto& m = models[i];
    const double own = static_cast<double>(m->vocab_size()) - 2;  // neither <unk> nor <s>
    members.push_back({m, weights[i], 1.0 / (union_size - own + 1)});
    if (weights[i] > 0) sum += weights[i];
    linear = linear || weights[i] > 0;
  }
  first_weight = 1 - sum;
}

NgramMix::NgramMix(std::shared_ptr<const MixPlan> plan, const ScoreOptions& opt, const Model* first)
    : plan_(std::move(plan)),
      streams_(plan_->members.size()),
      first_has_start_(opt.add_start && (!first || start_token(first->tokenizer()) >= 0)),
      context_(opt.context),
      window_(opt.window) {}

void NgramMix::feed(const WordScore& w, double* row) {
  if (row) {
    // The first model scored a word it lacks as its unk: that word's share of the unk mass.
    const double p0 = std::exp(w.logprob);
    row[0] = w.oov ? p0 * plan_->first_unk_share : p0;
  }
  for (size_t i = 0; i < streams_.size(); ++i) {
    const MixPlan::Member& m = plan_->members[i];
    Stream& st = streams_[i];
    const NgramModel& lm = *m.model;
    const auto found = w.eos ? std::optional<uint32_t>(lm.eos()) : lm.find(w.token);
    const bool known = found && *found != lm.unk() && *found != lm.bos();
    const NgramScore s = lm.score(st.state, known ? *found : lm.unk(), st.state);
    st.last_log10 = s.log10prob;
    if (row) row[i + 1] = std::pow(10.0, s.log10prob) * (known ? 1.0 : m.unk_share);
  }
}

void NgramMix::start_line() {
  if (context_ == ContextMode::Document && started_) return;
  for (size_t i = 0; i < streams_.size(); ++i) {
    const NgramModel& lm = *plan_->members[i].model;
    streams_[i].state = first_has_start_ ? lm.begin_sentence() : lm.null_context();
  }
  started_ = true;
}

void NgramMix::probabilities(const std::vector<LineScore>& lines, std::vector<double>& out) {
  const size_t k = models();
  for (const LineScore& l : lines) {
    if (l.skipped) continue;
    start_line();
    for (const WordScore& w : l.words) {
      if (w.id < 0) continue;  // a skipped OOV: fed to no model
      if (!w.scored) {
        feed(w, nullptr);
        continue;
      }
      out.resize(out.size() + k);
      feed(w, out.data() + out.size() - k);
    }
  }
}

void NgramMix::mix(std::vector<LineScore>& lines, Engine* engine) {
  if (plan_->mode == MixMode::LogLinear) {
    if (!engine)
      throw UsageError::option("mix_mode",
                               " loglinear: needs a neural first model (its whole distributions)");
    if (context_ == ContextMode::Document || window_.windowed())
      throw UsageError::option("mix_mode", " loglinear: sentence mode only, without a window");
    mix_loglinear(lines, *engine);
    return;
  }
  std::vector<double> row(models());
  for (LineScore& l : lines) {
    if (l.skipped) continue;
    start_line();
    l.logprob = l.oov_logprob = 0;
    l.nonfinite = 0;
    for (WordScore& w : l.words) {
      if (w.id < 0) continue;  // a skipped OOV: fed to no model
      feed(w, w.scored ? row.data() : nullptr);
      if (!w.scored) continue;
      // Without a model of positive weight there is no mixture over the union: the first model's own ln p.
      double p = plan_->linear ? plan_->first_weight * row[0] : std::exp(w.logprob), lodr = 0;
      for (size_t i = 0; i < streams_.size(); ++i) {
        const double wi = plan_->members[i].weight;
        if (wi > 0)
          p += wi * row[i + 1];
        else  // LODR: the low-order model's own ln p of the word (<unk>'s for a word it lacks)
          lodr += wi * streams_[i].last_log10 * kLn10;
      }
      const double lp = std::log(p) + lodr;
      w.logprob = lp;
      w.ngram = 0;
      if (!std::isfinite(lp)) ++l.nonfinite;
      l.logprob += lp;
      if (w.oov) l.oov_logprob += lp;
    }
  }
}

void NgramMix::mix_loglinear(std::vector<LineScore>& lines, Engine& engine) {
  const Model& model = engine.model();
  const MixRow mixer(plan_, model);
  const int32_t start = first_has_start_ ? start_token(model.tokenizer()) : -1;
  std::vector<float> row(static_cast<size_t>(model.vocab_size()));
  MatrixRM lp;
  for (LineScore& l : lines) {
    if (l.skipped) continue;
    l.logprob = l.oov_logprob = 0;
    l.nonfinite = 0;
    // The line run again one token at a time: the row before each word, mixed after the words before it.
    std::vector<int32_t> fed;
    std::vector<State> state{State::zeros(model)};
    auto step = [&](int32_t id) {
      engine.predict(Sequences{{id}}, state, lp);
      fed.push_back(id);
    };
    if (start >= 0) step(start);
    for (WordScore& w : l.words) {
      if (w.id < 0) continue;          // a skipped OOV: fed to no model
      if (w.scored && !fed.empty()) {  // a first word without context is never scored
        const float* r = lp.row(0).data();
        row.assign(r, r + row.size());
        mixer.apply(fed, start >= 0, row.data());
        const double v = row[static_cast<size_t>(w.id)];
        w.logprob = v;
        w.ngram = 0;
        if (!std::isfinite(v)) ++l.nonfinite;
        l.logprob += v;
        if (w.oov) l.oov_logprob += v;
      }
      step(w.id);
    }
  }
}

MixRow::MixRow(std::shared_ptr<const MixPlan> plan, const Model& first)
    : plan_(std::move(plan)),
      V_(first.vocab_size()),
      unk_(first.tokenizer().unk_id().value_or(-1)),
      start_(start_token(first.tokenizer())) {
  require_word_model(first);
  const auto eos = first.tokenizer().eos_id();
  for (const auto& m : plan_->members) {
    if (m.weight < 0)
      throw UsageError::option("mix",
                               ": a negative weight (LODR) only in rescore, which adds its ln p to a "
                               "score; predict and generate need a distribution");
    const NgramModel& lm = *m.model;
    std::vector<uint32_t> word(static_cast<size_t>(V_));
    std::vector<uint8_t> known(static_cast<size_t>(V_));
    for (int32_t j = 0; j < V_; ++j) {
      const auto found =
          eos && j == *eos ? std::optional<uint32_t>(lm.eos()) : lm.find(first.vocab().token(j));
      const bool has = found && *found != lm.unk() && *found != lm.bos() && j != unk_;
      word[static_cast<size_t>(j)] = has ? *found : lm.unk();
      known[static_cast<size_t>(j)] = has;
    }
    word_.push_back(std::move(word));
    known_.push_back(std::move(known));
  }
}

void MixRow::apply(std::span<const int32_t> history, bool from_start, float* row) const {
  const auto V = static_cast<size_t>(V_);
  const bool linear = plan_->mode == MixMode::Linear;
  // Linear: the weighted sum of the probabilities; log-linear: the weighted sum of the ln p. The rows are
  // scratch of the calling thread (a MixRow is shared), so a generate step allocates nothing.
  thread_local std::vector<double> p, pi;
  p.resize(V);
  pi.resize(V);
  for (size_t j = 0; j < V; ++j)
    p[j] = plan_->first_weight * (linear ? std::exp(double(row[j])) : double(row[j]));
  for (size_t i = 0; i < plan_->members.size(); ++i) {
    const MixPlan::Member& m = plan_->members[i];
    const NgramModel& lm = *m.model;
    // The state after the history: only its last order - 1 words matter, so they are fed from the null
    // context (or from <s> when the history is that short and starts with the start token).
    const size_t keep = static_cast<size_t>(std::max(0, lm.order() - 1));
    size_t from = history.size() > keep ? history.size() - keep : 0;
    NgramState state = lm.null_context();
    if (from_start && from == 0 && !history.empty()) {
      state = lm.begin_sentence();
      from = 1;
    }
    for (size_t t = from; t < history.size(); ++t) {
      const auto id = static_cast<size_t>(history[t]);
      lm.score(state, id < V ? word_[i][id] : lm.unk(), state);
    }
    double rest = 1;
    for (size_t j = 0; j < V; ++j)
      if (static_cast<int32_t>(j) != unk_) {
        pi[j] = std::pow(10.0, lm.score(state, word_[i][j]).log10prob) * (known_[i][j] ? 1 : m.unk_share);
        rest -= pi[j];
      }
    // The class of the words the first model lacks: what this model's own words leave.
    if (unk_ >= 0) pi[static_cast<size_t>(unk_)] = std::max(rest, 0.0);
    for (size_t j = 0; j < V; ++j) {
      if (linear && static_cast<int32_t>(j) != unk_) p[j] += m.weight * pi[j];
      if (!linear) p[j] += m.weight * std::log(pi[j]);
    }
  }
  if (!linear) {  // renormalized over the vocabulary
    double top = -std::numeric_limits<double>::infinity();
    for (double v : p) top = std::max(top, v);
    double z = 0;
    for (double v : p) z += std::exp(v - top);
    const double lz = top + std::log(z);
    for (size_t j = 0; j < V; ++j) row[j] = static_cast<float>(p[j] - lz);
    return;
  }
  double rest = 1;
  for (size_t j = 0; j < V; ++j)
    if (static_cast<int32_t>(j) != unk_) {
      rest -= p[j];
      row[j] = static_cast<float>(std::log(p[j]));
    }
  if (unk_ >= 0) row[unk_] = static_cast<float>(std::log(std::max(rest, 0.0)));
}

std::vector<MixIteration> mix_em(const std::vector<double>& probs, size_t k, int max_iterations,
                                 double tolerance) {
  const size_t tokens = k ? probs.size() / k : 0;
  std::vector<double> w(k, 1.0 / static_cast<double>(k)), next(k);
  std::vector<MixIteration> out;
  bool converged = false;
  for (int it = 0;; ++it) {
    // The perplexity with w, and the E step's posteriors summed, in one pass.
    double ln = 0;
    std::fill(next.begin(), next.end(), 0.0);
    for (size_t t = 0; t < tokens; ++t) {
      const double* p = probs.data() + t * k;
      double sum = 0;
      for (size_t j = 0; j < k; ++j) sum += w[j] * p[j];
      ln += std::log(sum);
      for (size_t j = 0; j < k; ++j) next[j] += w[j] * p[j] / sum;
    }
    out.push_back({w, std::exp(-ln / static_cast<double>(tokens))});
    if (converged || it == max_iterations) break;
    double moved = 0;
    for (size_t j = 0; j < k; ++j) {
      next[j] /= static_cast<double>(tokens);
      moved = std::max(moved, std::fabs(next[j] - w[j]));
    }
    w = next;
    converged = moved <= tolerance;
  }
  return out;
}

double perplexity_of(const std::vector<double>& probs, size_t k, size_t column) {
  const size_t tokens = probs.size() / k;
  double ln = 0;
  for (size_t t = 0; t < tokens; ++t) ln += std::log(probs[t * k + column]);
  return std::exp(-ln / static_cast<double>(tokens));
}

}  // namespace lstmlm::tasks
