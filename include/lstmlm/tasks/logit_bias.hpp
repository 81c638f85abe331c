// Per-token biases (`--logit-bias TOKEN=VALUE`): added to a step's log-probabilities before the choice,
// the row renormalized, in sampling and beam search alike (docs/generation.md).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lstmlm/model.hpp"

namespace lstmlm::tasks {

class LogitBias {
 public:
  // Each item is TOKEN=VALUE (split at the last '='): TOKEN a word of the vocabulary, else a token id in
  // [0, V); VALUE a finite number of natural-log units in [-kMaxLogitBias, kMaxLogitBias]. A token given
  // twice has its values added. A bad item is a UsageError naming the option "logit_bias".
  static LogitBias parse(const Model& model, const std::vector<std::string>& items);
  // The same from (token, value) pairs (the server's JSON object, Python's dict).
  static LogitBias from_pairs(const Model& model, const std::vector<std::pair<std::string, double>>& pairs);

  bool empty() const { return bias_.empty(); }
  const std::vector<std::pair<int32_t, float>>& entries() const { return bias_; }  // ascending id
  // lp'_j = lp_j + b_j - ln sum_k exp(lp_k + b_k), in place over a row of V log-probs.
  void apply(float* logprobs, int V) const;

 private:
  void add(const Model& model, const std::string& token, double value);
  std::vector<std::pair<int32_t, float>> bias_;
};

// Renormalizes a row of V log-weights in place (max-subtracted, summed in double): what a boost and a bias
// do after adding their bonuses.
void renormalize_logprobs(float* logprobs, int V);

}  // namespace lstmlm::tasks
