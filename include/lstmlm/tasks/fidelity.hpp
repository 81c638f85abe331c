// Fidelity of a lower precision to fp32 (docs/precision.md), as llama.cpp's `perplexity --kl-divergence`:
// the same text through two engines on one model, a reference (fp32) and a low one (bf16, int8), and for
// every scored token the two full next-token distributions compared. Typed inputs -> typed results (no
// printing).
//  - The tokens are score's (tasks/score.hpp): the same tokenization, line mode (sentence or document),
//    start token, eos, OOV rules and windows, so the reference perplexity is score's summary perplexity
//    bit for bit. Measures and --aggregate words do not apply (refused).
//  - Per scored token, with p the reference and q the low distribution (ln p, ln q as the engines give
//    them, float): KL(p||q) = sum_v p_v (ln p_v - ln q_v) accumulated in double (a p_v of 0 adds 0);
//    |Δ ln p(target)| = |ln p_target - ln q_target|; top-1 agreement when argmax p == argmax q (the lowest
//    id among equal maxima).
//  - Totals are added line by line in input order, so they do not depend on the batch size.
//  - With a mixture (MixRow, --mix), both sides' rows are the mixture's (MixRow::apply after the same
//    history) before they are compared: the fidelity of the mixed model, whose n-gram part is the same on
//    both sides.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/mix.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::tasks {

// One token's comparison of two log-probability rows over the same vocabulary.
struct TokenFidelity {
  double kl = 0;      // KL(p||q) in nats, in double
  double dlogp = 0;   // |ln p(target) - ln q(target)|
  bool top1 = false;  // argmax p == argmax q
};

// The comparison of one position; logp and logq have the same size (the vocabulary), target indexes them.
TokenFidelity compare_rows(std::span<const float> logp, std::span<const float> logq, int32_t target);

// KL(p||q) = sum_v exp(logp_v) (logp_v - logq_v) in double; a term with logp_v = -inf is 0.
double kl_divergence(std::span<const float> logp, std::span<const float> logq);

// The first index of the largest value (-1 for an empty row; NaN never compares greater).
int32_t argmax(std::span<const float> row);

struct FidelityResult {
  std::string kernels_ref, kernels_low;  // Engine::kernels() of each side, e.g. "fp32/avx2", "bf16/avx512"
  int64_t tokens = 0;                    // scored tokens compared (eos and OOVs scored as unk included)
  int64_t top1_agree = 0;                // of them, those whose argmax agrees
  double kl_sum = 0, kl_max = 0;         // sum and largest KL(p||q), nats
  double dlogp_max = 0;                  // largest |Δ ln p(target)|
  ScoreSummary ref, low;                 // score's summary of each side (the same tokens)

  double mean_kl() const;         // kl_sum / tokens (NaN when nothing was compared)
  double top1_agreement() const;  // top1_agree / tokens, a fraction in [0, 1] (NaN when nothing)
  double perplexity_ref() const { return ref.perplexity(); }
  double perplexity_low() const { return low.perplexity(); }
  // (PPL low - PPL ref) / PPL ref, signed (including OOVs, as score's first perplexity).
  double relative_delta_ppl() const;
};

class Fidelity {
 public:
  // reference and low must run the same Model object (UsageError otherwise). `opt` as for the Scorer;
  // entropy, rank and Aggregate::Words are refused (UsageError).
  // `mix`: each row of both sides rewritten by it first (null: none).
  Fidelity(Engine& reference, Engine& low, ScoreOptions opt, std::shared_ptr<const MixRow> mix = nullptr);
  // Compares a block of lines, as Scorer::score scores it (document mode carries the state on).
  void add(const std::vector<std::string>& lines, const std::string& source, uint64_t first_line,
           const std::vector<LineEnd>& ends = {});
  const FidelityResult& result() const { return r_; }

 private:
  struct Line;
  void run_rows(std::vector<Line>& lines, const std::vector<size_t>& owners, const Sequences& inputs,
                const Sequences& targets, std::vector<State>& sref, std::vector<State>& slow,
                const std::vector<int32_t>& before = {});
  // Both rows after `history` (the ids fed, the stream's start token first when it is there) through the
  // mixture, when there is one.
  void mix_rows(std::span<const int32_t> history, float* p, float* q) const;
  void run_sentences(std::vector<Line>& lines);
  void run_document(std::vector<Line>& lines);
  void run_windowed(std::vector<Line>& lines);
  void compare(Line& l, const float* p, const float* q, int32_t target);
  Engine* ref_;
  Engine* low_;
  ScoreOptions opt_;
  int32_t start_ = -1;
  State doc_ref_, doc_low_;
  int32_t doc_pending_ = -1;
  std::vector<int32_t> doc_history_;
  std::shared_ptr<const MixRow> mix_;
  std::vector<int32_t> doc_fed_;  // document mode with a mixture: the last ids fed (the n-grams' history)
  FidelityResult r_;
};

}  // namespace lstmlm::tasks
