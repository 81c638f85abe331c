// The double-precision path: models whose output is class-factored or has rnnlm's direct connections, or
// that compute with rnnlm's exp (ModelConfig::exact_path). Each row runs alone, step by step, in double with
// each sum in one fixed order, as rnnlm 0.3e computes: its probabilities to the last printed digit. Scoring
// computes only the target's class row and the words of its class; a full distribution every class's words.
#pragma once
#include <memory>
#include <vector>

#include "engine/forward.hpp"
#include "lstmlm/model.hpp"

namespace lstmlm::engine {

// Runs every row of `job` on the calling thread.
void exact_forward(const Model& model, const Job& job);

// A class-factored model's next-token distribution after a state, in its two factors, as the double path
// computes them: p(class) for every class, and p(word | class) for one class on demand, so a sampler that
// draws the class, then the word, reads C + |class| output rows, not V.
class ClassFactors {
 public:
  explicit ClassFactors(const Model& model);  // the model must have output.classes
  ~ClassFactors();
  ClassFactors(const ClassFactors&) = delete;
  ClassFactors& operator=(const ClassFactors&) = delete;
  // The distribution after `state` (a state of this model, advanced by the Engine).
  void load(const State& state);
  // p(class k) for k < classes, summing to 1.
  const std::vector<double>& classes();
  // p(word | class k) for the class's words, ids first_word(k), first_word(k) + 1, ...
  const std::vector<double>& words(int k);
  int32_t first_word(int k) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lstmlm::engine
