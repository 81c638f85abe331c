// Rescoring n-best lists (docs/rescoring.md): every hypothesis scored as `score` scores a line in sentence
// mode, bit for bit, with each distinct prefix computed once, and combined with the hypothesis' own scores.
//  - PrefixScorer: scores lines through a prefix tree over their (input, target) steps. A step shared
//    by several lines is run once; the state at a branch point is kept until its branches have run; the
//    branches of all lines in one call are batched together. The engine is batch- and chunk-invariant
//    (tests/engine_invariance_test.cpp), so every number equals Scorer's.
//  - Rescorer: groups hypotheses by utterance, adds interpolation with an n-gram log-prob and the
//    weighted combination, marks each utterance's best, and (conversation context) carries the state of
//    the chosen best hypothesis into the next utterance of the same recording.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/ngram.hpp"
#include "lstmlm/tasks/mix.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::tasks {

// Where a line's stream starts: the state and the token fed first (-1: none; the line's first token is
// then context only, as in sentence mode without a start token).
struct StreamStart {
  State state;
  int32_t pending = -1;
};

// What prefix sharing saved: `steps` the (input, target) steps of all lines, `computed` those run.
struct PrefixStats {
  int64_t lines = 0, steps = 0, computed = 0;
};

class PrefixScorer {
 public:
  // opt.context is ignored (every line starts from the StreamStart given to score()).
  PrefixScorer(Engine& engine, ScoreOptions opt);
  // Sentence mode's start: zero state, bos_token (else eos_token, else none).
  StreamStart sentence_start() const;
  // Scores lines (without line ends; line_numbers[i] of `source` for messages and records), each from
  // `from`. Equal to Scorer::score in sentence mode when `from` is sentence_start().
  std::vector<LineScore> score(const std::vector<std::string>& lines,
                               const std::vector<uint64_t>& line_numbers, const std::string& source,
                               const StreamStart& from);
  // Lines already tokenized (tokenize_line's records, not yet scored), each from `from`.
  void score_tokenized(std::vector<LineScore>& lines, const StreamStart& from);
  // The start after `line` (scored from `from`): as if the stream went on through it, as document mode does.
  StreamStart after(const StreamStart& from, const LineScore& line);
  const PrefixStats& stats() const { return stats_; }

 private:
  Engine* engine_;
  ScoreOptions opt_;
  PrefixStats stats_;
};

// How an n-gram log-prob given with the hypotheses is read.
enum class LogUnits { Log10, Ln, Cost };  // Cost: -ln p, as Kaldi's graph and LM costs

struct Interpolation {
  double lambda = 0.5;  // weight of the LSTM probability, in [0, 1]
  size_t score = 0;     // index into the hypotheses' scores of the n-gram log-prob
  LogUnits units = LogUnits::Log10;
};

struct RescoreOptions {
  ScoreOptions score;           // tokenization, eos, OOV policy, batch size (context is not used)
  bool conversation = false;    // carry the best hypothesis' state into the next utterance of its recording
  std::vector<double> weights;  // one per score of the hypotheses (0: printed, not combined)
  double lm_weight = 1.0, word_penalty = 0.0;
  std::optional<Interpolation> interpolate;
  // ARPA models mixed into the LM's per-token probabilities (tasks/mix.hpp; a negative weight is LODR's),
  // each hypothesis from <s>; null: none.
  std::shared_ptr<const MixPlan> mix;
  // With a backward model (Rescorer's `backward` engine, a right-to-left model scored with
  // ScoreOptions::reverse): the LM log-prob becomes (1 - w) ln p_forward + w ln p_backward, the forward's
  // interpolated with the n-gram first when asked, as Kaldi's lmrescore_back.sh weighs its two passes.
  double backward_weight = 0.5;
};

struct Hypothesis {
  std::string utt;        // utterance id
  std::string id;         // hypothesis id ("UTT-N" as read, or made from utt and n)
  int64_t n = 0;          // 1-based position within its utterance
  std::string recording;  // conversation context: hypotheses of one recording continue each other
  std::string text;
  uint64_t line = 0;  // of its source, for messages
  // One entry per score name: one value, or (the n-gram score, per token) one per scored token.
  std::vector<std::vector<double>> scores;
};

struct HypothesisScore {
  LineScore lm;           // the LSTM LM's per-word scores, as `score` gives them (ln)
  double lm_logprob = 0;  // ln p of the hypothesis: lm.logprob, or the interpolated value, or (backward)
                          // (1 - w) lm_forward + w backward_logprob
  double lm_forward = 0;  // the forward LM's part: lm.logprob, or the interpolated value
  double backward_logprob =
      0;                // the backward model's ln p of the reversed hypothesis (with a backward model)
  int64_t words = 0;    // words of the hypothesis (eos not counted, OOVs counted)
  double combined = 0;  // sum_k weights[k]·score_k + lm_weight·lm_logprob + word_penalty·words
  bool best = false;    // the highest combined score of its utterance (the first on a tie)
};

class Rescorer {
 public:
  // backward: a right-to-left model, each hypothesis scored reversed and weighed in (backward_weight); not
  // with the conversation context (a backward model reads an utterance from its end).
  Rescorer(Engine& engine, RescoreOptions opt, Engine* backward = nullptr);
  // Scores complete utterances: the hypotheses of one utterance are contiguous and all in this call.
  // Throws InputError (prefixed "SOURCE:LINE: ") for a hypothesis that cannot be tokenized, whose per-token
  // n-gram scores do not match its tokens or whose id another hypothesis of its utterance has, and
  // (conversation context) for a recording that comes back after another one; the context is then left as it
  // was.
  std::vector<HypothesisScore> rescore(const std::vector<Hypothesis>& hyps, const std::string& source);
  const PrefixStats& stats() const { return prefix_.stats(); }

 private:
  void combine(const Hypothesis& h, HypothesisScore& s, const std::string& source) const;
  // Throws for a duplicate hypothesis id within an utterance or a recording that comes back; returns the
  // recordings this call ends (to be added to ended_ once it succeeds).
  std::vector<std::string> check(const std::vector<Hypothesis>& hyps, const std::string& source) const;
  // Scores hyps [begin, end) from `from` (one prefix tree) and combines them.
  void run(const std::vector<Hypothesis>& hyps, std::vector<HypothesisScore>& out, size_t begin, size_t end,
           const StreamStart& from, const std::string& source);
  Engine* engine_;
  PrefixScorer prefix_;
  RescoreOptions opt_;
  std::optional<NgramMix> mix_;
  Engine* backward_ = nullptr;
  std::optional<PrefixScorer> backward_prefix_;
  // Conversation context: the recording of the last utterance and where its best hypothesis left off.
  std::string recording_;
  std::optional<StreamStart> carried_;
  // Recordings whose utterances have ended: one that comes back would be scored without its context.
  std::unordered_set<std::string> ended_;
};

}  // namespace lstmlm::tasks
