// Linear interpolation, token by token, of a model's scores with ARPA n-gram models and other neural word
// models (docs/mixing.md): SRILM's -mix-lm/-lambda and rnnlm's -lm-prob. The first model (-m) tokenizes; each
// other model scores the same words (a neural one: its ids of those words).
//  - p(w | h) = sum_i lambda_i p_i(w | h), the first model's weight 1 - the others';
//  - vocabularies are matched by word string; a line end is one word in all of them (eos, </s>);
//  - a word a model lacks gets an equal share of that model's <unk> probability: its unk mass split over
//    the words of the union U of the vocabularies it lacks, plus one share for "every word outside U". So
//    each model's distribution, and the mixture's, sums to 1 over U and that class;
//  - each ARPA model follows the first model's stream: its start (<s>, or the null context when the first
//    model has no start token), every token fed (a context-only first token, an OOV as <unk>), line ends
//    as </s>; a skipped OOV is skipped by all.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/model.hpp"
#include "lstmlm/ngram.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::tasks {

// One "--mix PATH:WEIGHT" (the last ':' splits: a path may hold ':'). UsageError naming "mix" otherwise.
struct MixMember {
  std::string path;
  double weight = 0;
};
MixMember parse_mix(std::string_view spec);
// Each weight in (0, 1] and their sum at most 1 (the first model gets the rest); UsageError naming "mix".
// `lodr` (rescore): a weight in [-1, 0) is allowed too: that model's ln p, times the weight, is added to the
// mixture's (LODR's subtraction of a low-order n-gram; not renormalized).
void check_mix_weights(const std::vector<MixMember>& members, bool lodr = false);

// How the models' probabilities combine: linear, p = sum_i w_i p_i (SRILM's -mix-lm, rnnlm's -lm-prob), or
// log-linear, p = prod_i p_i^w_i / Z(h), renormalized over the first model's vocabulary (each model's
// probability of a word as in the linear mixture; the first model's unk token is the class of every word
// it lacks, each other model's probability of that class what its words leave), as KenLM's interpolate -l.
enum class MixMode { Linear, LogLinear };

// What a mixture is, computed once and shared by every stream that mixes (a server's requests): the n-gram
// models, their weights and the unk shares the union of the vocabularies gives each model.
struct MixPlan {
  struct Member {
    std::shared_ptr<const NgramModel> model;  // an ARPA model, or
    std::shared_ptr<const Model> neural;      // a neural word model
    double weight;
    double unk_share = 1;  // 1 / (words of the union it lacks + 1)
    std::string path;      // as given, for messages
  };
  // `first_words`: the first model's vocabulary as words (its eos as "</s>", without its unk token).
  MixPlan(std::vector<std::shared_ptr<const NgramModel>> models, std::vector<double> weights,
          const std::vector<std::string>& first_words);
  // Members with their model (either kind), weight and path; their unk shares are computed here.
  MixPlan(std::vector<Member> members, const std::vector<std::string>& first_words);
  std::vector<Member> members;
  double first_weight = 1;
  double first_unk_share = 1;
  bool linear = false;  // a model of positive weight: the mixture is over the union
  MixMode mode = MixMode::Linear;
};

// The mixture of "--mix MODEL:WEIGHT" specs (parse_mix, check_mix_weights with `lodr`), each MODEL an ARPA
// file or a neural word model's directory (UsageError naming "mix" otherwise; ModelError for a malformed
// one), for a first model of `first_words` (NgramMix::words_of). The one reading of the option for every
// front end. `mode` LogLinear: a negative weight is refused; a neural member's weight is positive.
std::shared_ptr<const MixPlan> load_mix(const std::vector<std::string>& specs,
                                        const std::vector<std::string>& first_words, bool lodr = false,
                                        MixMode mode = MixMode::Linear);

// The first model of a mixture is a word model (an n-gram model scores words): UsageError naming "mix"
// otherwise. NgramMix::words_of, MixRow and the rescorer check it; a front end need not.
void require_word_model(const Model& first);

class NgramMix {
 public:
  // For lines scored with `opt` by `first` (null: an ARPA model): its context mode, and whether its lines
  // start from a start token (else the n-gram models start from the null context).
  NgramMix(std::shared_ptr<const MixPlan> plan, const ScoreOptions& opt, const Model* first);
  // The words of a neural model as NgramMix's first model (require_word_model first).
  static std::vector<std::string> words_of(const Model& model);
  static std::vector<std::string> words_of(const NgramModel& model);

  // Rewrites the scored words of consecutive lines (the first model's records, in input order) with the
  // mixture's ln p, and each line's totals with them. Document mode carries the n-gram states on. A
  // log-linear mixture needs the first model's whole rows: `engine` runs it again over each line (sentence
  // mode, stateful only: UsageError naming "mix_mode" otherwise, or without an engine).
  void mix(std::vector<LineScore>& lines, Engine* engine = nullptr);

  // The probability each model gives each scored word of the lines (the first model's, then each ARPA
  // model's, in the order given, each with its unk share): appended to `out`, one row of 1 + ARPA models per
  // scored word. Advances the n-gram states as mix() does; the records are left as they are.
  void probabilities(const std::vector<LineScore>& lines, std::vector<double>& out);

  size_t models() const { return plan_->members.size() + 1; }

 private:
  struct Stream {
    NgramState state;
    double last_log10 = 0;  // log10 p of the word fed last
  };
  // A neural member: its engine and scorer (ids input, the first model's context mode), its scores of the
  // block's lines (one LineScore per line the first model did not skip) and where feed() reads next.
  struct Neural {
    std::unique_ptr<Engine> engine;
    std::unique_ptr<Scorer> scorer;
    std::vector<LineScore> lines;
    size_t line = 0, word = 0;
  };
  // Each neural member's scores of the lines' fed words (their ids in its vocabulary), before feed() reads
  // them.
  void score_neural(const std::vector<LineScore>& lines);
  void next_line();  // feed() reads the next line's scores (the lines not skipped, in order)
  // Feeds w to every n-gram model; when scored, writes the 1 + ARPA models' probabilities of w to `row`.
  void feed(const WordScore& w, double* row);
  void start_line();
  void mix_loglinear(std::vector<LineScore>& lines, Engine& engine);
  std::shared_ptr<const MixPlan> plan_;
  std::vector<Stream> streams_;
  std::vector<Neural> neural_;  // per member: empty for an ARPA one
  size_t block_line_ = 0;       // the lines of the block not skipped so far (next_line)
  bool first_has_start_;
  ContextMode context_;
  WindowOptions window_;
  bool started_ = false;
};

// The mixture as a distribution over the first model's ids, for predict, generate, beam search and
// fidelity: each row the first model computes after a history is rewritten with the mixture's ln p. A word
// of the first model's vocabulary gets the probability score --mix gives it (the same terms, unk shares
// included); the first model's unk token stands for every word it lacks (the words only the other models
// know and the words outside the union): its probability is what the others leave, 1 - their sum, so the
// row sums to 1. A first model without an unk token: the row sums to the mass of the words it has.
// Shared by threads and requests. A neural member runs on engines of its own, one per concurrent call,
// kept with the state after the history they last read (at most kNeuralSlots per member): a call whose
// history extends a kept one (the next step of a generated row, a beam's hypothesis) feeds only the new ids.
class MixRow {
 public:
  static constexpr size_t kNeuralSlots = 64;
  // Throws UsageError naming "mix" for a plan with a negative (LODR) weight (rescore only), or a neural
  // member that lacks a start token the first model has, or an unk token.
  MixRow(std::shared_ptr<const MixPlan> plan, const Model& first);
  ~MixRow();
  MixRow(const MixRow&) = delete;
  MixRow& operator=(const MixRow&) = delete;
  // `row`: the first model's ln p over its V ids after `history`, the ids fed to it (its start token
  // first when `from_start`: the other models then start at theirs, <s> for an n-gram model, else from the
  // null context or a neural model's zero state; an eos after that is </s>). Only the last order - 1 ids
  // reach an n-gram model; a neural member reads them all.
  void apply(std::span<const int32_t> history, bool from_start, float* row) const;
  const MixPlan& plan() const { return *plan_; }
  int32_t vocab_size() const { return V_; }
  int32_t start() const { return start_; }  // the first model's start token, -1 when it has none

 private:
  struct Slot;
  struct Pool;
  // A neural member's ln p over its own vocabulary after the history (its ids), into `out`.
  void neural_row(size_t member, std::span<const int32_t> history, bool from_start,
                  std::vector<float>& out) const;
  std::shared_ptr<const MixPlan> plan_;
  int32_t V_ = 0, unk_ = -1, start_ = -1;
  // Per member: the id of each first-model id's word in it (its unk when it lacks the word), and whether
  // it has the word (else the word's probability is its unk share).
  std::vector<std::vector<uint32_t>> word_;
  std::vector<std::vector<uint8_t>> known_;
  std::vector<std::unique_ptr<Pool>> pools_;  // per member: a neural one's engines; null for an n-gram one
};

}  // namespace lstmlm::tasks

namespace lstmlm::tasks {

// Mixture weights by expectation-maximization on the models' per-token probabilities (SRILM's
// compute-best-mix): from equal weights, each iteration sets weight k to the mean over the tokens of
// w_k p_k / sum_j w_j p_j; it stops when no weight moves by more than `tolerance`, or after
// `max_iterations`.
struct MixIteration {
  std::vector<double> weights;
  double perplexity = 0;  // exp(-mean ln sum_k w_k p_k) over the tokens, with these weights
};
// `probs`: one row of `k` probabilities per token. Every iteration, the starting weights first.
std::vector<MixIteration> mix_em(const std::vector<double>& probs, size_t k, int max_iterations,
                                 double tolerance = 1e-7);
// exp(-mean ln p) of column `column` alone.
double perplexity_of(const std::vector<double>& probs, size_t k, size_t column);

}  // namespace lstmlm::tasks
