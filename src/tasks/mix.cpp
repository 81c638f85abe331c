#include "lstmlm/tasks/mix.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
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
  std::vector<MixPlan::Member> loaded;
  for (const auto& m : members) {
    if (::access(m.path.c_str(), R_OK) != 0)
      throw UsageError::option("mix", " " + m.path + ": cannot open: " + std::strerror(errno));
    std::error_code ec;
    if (std::filesystem::is_directory(m.path, ec)) {  // a neural model's directory
      if (m.weight < 0)
        throw UsageError::option("mix", " " + m.path +
                                            ": a neural model's weight is positive (LODR subtracts "
                                            "a low-order ARPA model)");
      auto neural = Model::load(m.path);
      require_word_model(*neural);
      loaded.push_back({nullptr, std::move(neural), m.weight, 1, m.path});
      continue;
    }
    if (!NgramModel::is_arpa(m.path))
      throw UsageError::option("mix", " " + m.path +
                                          ": neither an ARPA n-gram model nor a model directory (the models "
                                          "mixed in are ARPA files or neural word models)");
    loaded.push_back({NgramModel::load(m.path), nullptr, m.weight, 1, m.path});
  }
  auto plan = std::make_shared<MixPlan>(std::move(loaded), first_words);
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

namespace {

std::vector<MixPlan::Member> ngram_members(std::vector<std::shared_ptr<const NgramModel>> models,
                                           const std::vector<double>& weights) {
  std::vector<MixPlan::Member> out;
  for (size_t i = 0; i < models.size(); ++i)
    out.push_back({models[i], nullptr, weights[i], 1, models[i]->path()});
  return out;
}

}  // namespace

MixPlan::MixPlan(std::vector<std::shared_ptr<const NgramModel>> models, std::vector<double> weights,
                 const std::vector<std::string>& first_words)
    : MixPlan(ngram_members(std::move(models), weights), first_words) {}

MixPlan::MixPlan(std::vector<Member> given, const std::vector<std::string>& first_words) {
  std::unordered_set<std::string> all(first_words.begin(), first_words.end());
  std::vector<double> own(given.size());  // each member's words: neither <unk> nor <s>
  for (size_t i = 0; i < given.size(); ++i) {
    const Member& m = given[i];
    const auto words = m.neural ? NgramMix::words_of(*m.neural) : NgramMix::words_of(*m.model);
    all.insert(words.begin(), words.end());
    own[i] = m.neural ? static_cast<double>(words.size()) : static_cast<double>(m.model->vocab_size()) - 2;
  }
  const double union_size = static_cast<double>(all.size());
  const std::unordered_set<std::string_view> first(first_words.begin(), first_words.end());
  first_unk_share = 1.0 / (union_size - static_cast<double>(first.size()) + 1);
  double sum = 0;
  for (size_t i = 0; i < given.size(); ++i) {
    Member m = std::move(given[i]);
    m.unk_share = 1.0 / (union_size - own[i] + 1);
    if (m.weight > 0) sum += m.weight;
    linear = linear || m.weight > 0;
    members.push_back(std::move(m));
  }
  first_weight = 1 - sum;
}

NgramMix::NgramMix(std::shared_ptr<const MixPlan> plan, const ScoreOptions& opt, const Model* first)
    : plan_(std::move(plan)),
      streams_(plan_->members.size()),
      first_has_start_(opt.add_start && (!first || start_token(first->tokenizer()) >= 0)),
      context_(opt.context),
      window_(opt.window) {
  neural_.resize(plan_->members.size());
  for (size_t i = 0; i < plan_->members.size(); ++i) {
    const MixPlan::Member& m = plan_->members[i];
    if (!m.neural) continue;
    const Tokenizer& tok = m.neural->tokenizer();
    // Every fed word is scored by it where the first model scores it: its start token, its unk for the
    // words it lacks, its eos for the line end.
    std::string lacks = first_has_start_ && start_token(tok) < 0 ? "a start token (bos, or eos as the start)"
                        : !tok.unk_id()                          ? "an unk token (for the words it lacks)"
                        : opt.append_eos && !tok.eos_id()        ? "an eos token (for the line ends)"
                                                                 : "";
    if (!lacks.empty())
      throw UsageError::option("mix", " " + m.path + ": a neural model mixed in needs " + lacks);
    if (window_.windowed() || opt.cache.on())
      throw UsageError::option("mix",
                               " " + m.path + ": a neural model is mixed in without --window or a cache");
    ScoreOptions mine;
    mine.context = opt.context;
    mine.append_eos = false;  // the first model's line end is one of the words given
    mine.add_start = opt.add_start;
    mine.ids_input = true;
    mine.skip_empty = false;
    mine.batch_size = opt.batch_size;
    EngineOptions eo;
    eo.threads = 1;
    neural_[i].engine = std::make_unique<Engine>(m.neural, eo);
    neural_[i].scorer = std::make_unique<Scorer>(*neural_[i].engine, mine);
  }
}

void NgramMix::score_neural(const std::vector<LineScore>& lines) {
  for (size_t i = 0; i < neural_.size(); ++i) {
    Neural& n = neural_[i];
    if (!n.scorer) continue;
    const MixPlan::Member& m = plan_->members[i];
    const Tokenizer& tok = m.neural->tokenizer();
    std::vector<std::string> ids;
    for (const LineScore& l : lines) {
      if (l.skipped) continue;
      std::string s;
      for (const WordScore& w : l.words) {
        if (w.id < 0) continue;  // a skipped OOV: fed to no model
        const auto id = w.eos ? tok.eos_id() : m.neural->vocab().find(w.token);
        s += (s.empty() ? "" : " ") + std::to_string(id ? *id : *tok.unk_id());
      }
      ids.push_back(std::move(s));
    }
    n.lines = n.scorer->score(ids, m.path, 1);
  }
  block_line_ = 0;
}

void NgramMix::next_line() {
  for (Neural& n : neural_) {
    n.line = block_line_;
    n.word = 0;
  }
  ++block_line_;
}

void NgramMix::feed(const WordScore& w, double* row) {
  if (row) {
    // The first model scored a word it lacks as its unk: that word's share of the unk mass.
    const double p0 = std::exp(w.logprob);
    row[0] = w.oov ? p0 * plan_->first_unk_share : p0;
  }
  for (size_t i = 0; i < streams_.size(); ++i) {
    const MixPlan::Member& m = plan_->members[i];
    if (m.neural) {  // its score of the word, read in order; a word it lacks gets its share of its unk
      Neural& n = neural_[i];
      const WordScore& mine = n.lines.at(n.line).words.at(n.word++);
      const bool known = w.eos || m.neural->vocab().find(w.token).has_value();
      streams_[i].last_log10 = mine.logprob / kLn10;
      if (row) row[i + 1] = mine.scored ? std::exp(mine.logprob) * (known ? 1.0 : m.unk_share) : 0.0;
      continue;
    }
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
    if (!plan_->members[i].model) continue;
    const NgramModel& lm = *plan_->members[i].model;
    streams_[i].state = first_has_start_ ? lm.begin_sentence() : lm.null_context();
  }
  started_ = true;
}

void NgramMix::probabilities(const std::vector<LineScore>& lines, std::vector<double>& out) {
  const size_t k = models();
  score_neural(lines);
  for (const LineScore& l : lines) {
    if (l.skipped) continue;
    start_line();
    next_line();
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
  score_neural(lines);
  for (LineScore& l : lines) {
    if (l.skipped) continue;
    start_line();
    next_line();
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

struct MixRow::Slot {
  std::unique_ptr<Engine> engine;
  std::vector<int32_t> fed;  // the member's ids read so far, its start token first
  std::vector<State> state;  // after them
  MatrixRM out;              // its ln p after them, when `ready`
  bool ready = false;
};

// The slots not in use, least recently used first.
struct MixRow::Pool {
  std::mutex mu;
  std::vector<std::unique_ptr<Slot>> idle;
};

MixRow::~MixRow() = default;

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
    std::vector<uint32_t> word(static_cast<size_t>(V_));
    std::vector<uint8_t> known(static_cast<size_t>(V_));
    if (m.neural) {
      const Tokenizer& tok = m.neural->tokenizer();
      if (start_ >= 0 && start_token(tok) < 0)
        throw UsageError::option("mix", " " + m.path +
                                            ": a neural model mixed in needs a start token (bos, "
                                            "or eos as the start), as the first model has");
      if (!tok.unk_id())
        throw UsageError::option("mix", " " + m.path +
                                            ": a neural model mixed in needs an unk token (for "
                                            "the words it lacks)");
      for (int32_t j = 0; j < V_; ++j) {
        const auto found = eos && j == *eos ? tok.eos_id() : m.neural->vocab().find(first.vocab().token(j));
        const bool has = found && *found != *tok.unk_id() && j != unk_;
        word[static_cast<size_t>(j)] = static_cast<uint32_t>(has ? *found : *tok.unk_id());
        known[static_cast<size_t>(j)] = has;
      }
      pools_.push_back(std::make_unique<Pool>());
    } else {
      const NgramModel& lm = *m.model;
      for (int32_t j = 0; j < V_; ++j) {
        const auto found =
            eos && j == *eos ? std::optional<uint32_t>(lm.eos()) : lm.find(first.vocab().token(j));
        const bool has = found && *found != lm.unk() && *found != lm.bos() && j != unk_;
        word[static_cast<size_t>(j)] = has ? *found : lm.unk();
        known[static_cast<size_t>(j)] = has;
      }
      pools_.push_back(nullptr);
    }
    word_.push_back(std::move(word));
    known_.push_back(std::move(known));
  }
}

void MixRow::neural_row(size_t i, std::span<const int32_t> history, bool from_start,
                        std::vector<float>& out) const {
  const MixPlan::Member& m = plan_->members[i];
  const Tokenizer& tok = m.neural->tokenizer();
  // The history in the member's ids: its start token for the first model's, its unk for a word it lacks.
  thread_local std::vector<int32_t> ids;
  ids.clear();
  for (size_t t = 0; t < history.size(); ++t) {
    const auto id = static_cast<size_t>(history[t]);
    if (t == 0 && from_start)
      ids.push_back(start_token(tok));
    else
      ids.push_back(static_cast<int32_t>(id < static_cast<size_t>(V_) ? word_[i][id] : *tok.unk_id()));
  }
  Pool& pool = *pools_[i];
  std::unique_ptr<Slot> slot;
  {
    // The idle slot that has read the longest prefix of the history, else the least recently used one.
    std::lock_guard lock(pool.mu);
    size_t best = pool.idle.size(), best_len = 0;
    for (size_t s = 0; s < pool.idle.size(); ++s) {
      const auto& fed = pool.idle[s]->fed;
      if (fed.size() <= ids.size() && (best == pool.idle.size() || fed.size() > best_len) &&
          std::equal(fed.begin(), fed.end(), ids.begin())) {
        best = s;
        best_len = fed.size();
      }
    }
    const bool reuse = best < pool.idle.size();
    if (!reuse && pool.idle.size() >= kNeuralSlots) best = 0;
    if (best < pool.idle.size()) {
      slot = std::move(pool.idle[best]);
      pool.idle.erase(pool.idle.begin() + static_cast<std::ptrdiff_t>(best));
      if (!reuse) {
        slot->fed.clear();
        slot->ready = false;
      }
    }
  }
  if (!slot) {
    slot = std::make_unique<Slot>();
    EngineOptions eo;
    eo.threads = 1;
    slot->engine = std::make_unique<Engine>(m.neural, eo);
  }
  if (slot->fed.empty() && !slot->ready) slot->state.assign(1, State::zeros(*m.neural));
  if (slot->fed.size() < ids.size() || !slot->ready) {
    const std::vector<int32_t> rest(ids.begin() + static_cast<std::ptrdiff_t>(slot->fed.size()), ids.end());
    slot->engine->predict(Sequences{rest}, slot->state, slot->out);
    slot->fed.assign(ids.begin(), ids.end());
    slot->ready = true;
  }
  const float* r = slot->out.row(0).data();
  out.assign(r, r + slot->out.cols());
  std::lock_guard lock(pool.mu);
  pool.idle.push_back(std::move(slot));
  if (pool.idle.size() > kNeuralSlots) pool.idle.erase(pool.idle.begin());
}

void MixRow::apply(std::span<const int32_t> history, bool from_start, float* row) const {
  const auto V = static_cast<size_t>(V_);
  const bool linear = plan_->mode == MixMode::Linear;
  // Linear: the weighted sum of the probabilities; log-linear: the weighted sum of the ln p. The rows are
  // scratch of the calling thread (a MixRow is shared), so a generate step allocates nothing.
  thread_local std::vector<double> p, pi;
  thread_local std::vector<float> member_row;
  p.resize(V);
  pi.resize(V);
  for (size_t j = 0; j < V; ++j)
    p[j] = plan_->first_weight * (linear ? std::exp(double(row[j])) : double(row[j]));
  for (size_t i = 0; i < plan_->members.size(); ++i) {
    const MixPlan::Member& m = plan_->members[i];
    double rest = 1;
    if (m.neural) {
      neural_row(i, history, from_start, member_row);
      for (size_t j = 0; j < V; ++j)
        if (static_cast<int32_t>(j) != unk_) {
          pi[j] = std::exp(double(member_row[word_[i][j]])) * (known_[i][j] ? 1 : m.unk_share);
          rest -= pi[j];
        }
    } else {
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
      for (size_t j = 0; j < V; ++j)
        if (static_cast<int32_t>(j) != unk_) {
          pi[j] = std::pow(10.0, lm.score(state, word_[i][j]).log10prob) * (known_[i][j] ? 1 : m.unk_share);
          rest -= pi[j];
        }
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
