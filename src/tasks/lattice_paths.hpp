// What the lattice search leaves (LatticeRescorer, lattice_rescore.cpp) and how its results are made from
// it: the n-best paths with rescore's numbers, and the histories as a lattice.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "lstmlm/lattice.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/lattice.hpp"

namespace lstmlm::tasks::detail {

// A way into a history: from token `prev` by lattice arc `arc`, with the log-probs of its steps.
struct LatticeEdge {
  int32_t prev = -1, arc = -1, final = -1;
  std::vector<float> lp;
};

struct LatticeToken {
  int32_t state = 0;
  std::shared_ptr<const State> lstm;  // after every word but the pending one; null once not needed
  int32_t pending = -1;
  int32_t trie = 0;  // its word sequence (fed ids and the pending one) in the search's trie; 0: the start
  std::vector<int32_t> history;    // merging: the last n-1 ids fed and pending
  double score = 0;                // the combination so far
  int32_t prev = -1, arc = -1;     // the best way in
  std::vector<float> lp;           // its steps' log-probs
  std::vector<LatticeEdge> edges;  // every way in (merged histories' too)
};

struct LatticeCompletion {
  int32_t token = -1, final = -1;
  double total = 0;
  std::vector<float> lp;  // eos
};

struct LatticeSearch {
  std::vector<LatticeToken> tokens;  // token 0: the start
  std::vector<LatticeCompletion> completions;
};

struct LatticeOutput {
  int64_t n_best = 1;
  bool lattice = false;
  std::vector<double> weights;
  double lm_weight = 1, word_penalty = 0;
};

LatticeResult lattice_result(const LatticeSearch& s, const Lattice& l, const Model* model,
                             const ScoreOptions& opt, const LatticeOutput& want);

}  // namespace lstmlm::tasks::detail
