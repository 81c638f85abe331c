// The continuous cache pointer (Grave et al. 2017, "Improving neural language models with a continuous
// cache"), as awd-lstm-lm's pointer.py computes it: at prediction i of a document (0-based) with i > W, the
// last W hidden states h_j of the top layer (each after its input, with the word w_j that followed it) give
//   ptr(w) = sum over j with w_j = w of softmax_j(theta * h_j . h_i),
//   p(w) = lambda * ptr(w) + (1 - lambda) * p_model(w);
// before that (i <= W) p(w) = p_model(w). The state of one document stream; docs/mixing.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lstmlm/engine.hpp"

namespace lstmlm::tasks {

struct CacheOptions {
  int window = 0;           // W; 0: no cache
  double lambda = 0.12785;  // pointer.py's defaults (tuned there on PTB)
  double theta = 0.6625;
  bool on() const { return window > 0; }
  bool operator==(const CacheOptions&) const = default;
  // UsageError naming cache_window / cache_lambda / cache_theta when out of range: W in [0, 2^20],
  // lambda in [0, 1], theta finite in [0, 1000].
  void validate() const;
};

// What the cache changed: the scored tokens, and the sums of ln p with and without it.
struct CacheStats {
  int64_t tokens = 0;
  double ln_with = 0, ln_without = 0;
};

class NeuralCache {
 public:
  NeuralCache(CacheOptions opt, size_t width);
  // The next n predictions of the document: out[t] = ln p of targets[t] with the cache, from the model's
  // ln p of it and the top layer's output h[t] (width floats) it was decoded from; then remembers them.
  // The attention logits are float dot products (a matrix product per block of predictions), the softmax
  // and the mixture double.
  void score(const float* h, const float* model_logprob, const int32_t* targets, size_t n, float* out);
  // The next prediction's whole distribution (predict, generate): `row`, the model's ln p over `V` ids
  // decoded from the top layer's output h, rewritten in place with ln(lambda ptr(w) + (1 - lambda) p(w));
  // unchanged before the cache starts (the prediction's position i <= W). Remembers nothing: push() does.
  void mix_row(const float* h, float* row, size_t V) const;
  // Remembers n predictions made: the outputs h (rows of width floats) and the words that followed them.
  void push(const float* h, const int32_t* next, size_t n);
  const CacheStats& stats() const { return stats_; }

 private:
  CacheOptions opt_;
  size_t width_;
  std::vector<float> history_;  // the last W outputs (rows of width_ floats), oldest first
  std::vector<int32_t> next_;   // the word that followed each
  int64_t seen_ = 0;            // predictions made so far
  CacheStats stats_;
};

// A cache that has read `context` (the ids fed, start token first: its predictions are those of context[1..]
// after the ids before them), run through `engine` from the zero state: `states` (one) after it, `lp` (one
// row) the model's next distribution, without the cache (mix_row with states[0]'s top-layer h gives it).
NeuralCache prefill_cache(Engine& engine, const CacheOptions& opt, const std::vector<int32_t>& context,
                          std::vector<State>& states, MatrixRM& lp);

}  // namespace lstmlm::tasks
