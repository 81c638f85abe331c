// Lattice rescoring (docs/rescoring.md): the LSTM's histories expanded over a word lattice in topological
// order, the states of every live history at the nodes of one level advanced in one engine call, with
// Kaldi's approximation (histories that share their last N-1 words merged), a beam and a bound on the
// histories kept per node. Each path's numbers are those `rescore` gives the path as an n-best entry, bit
// for bit: its steps are the same steps, and the engine is batch- and chunk-invariant.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/lattice.hpp"
#include "lstmlm/tasks/rescore.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::tasks {

struct LatticeRescoreOptions {
  ScoreOptions score;           // eos, OOV policy, batch size (rows per engine call)
  std::vector<double> weights;  // one per Lattice::score_names (0: printed, not combined)
  double lm_weight = 1.0, word_penalty = 0.0;
  // Histories at a node whose last N-1 words agree are merged, the better kept (0: none merged).
  int max_ngram_order = 0;
  // Histories at a node more than `beam` below the node's best are dropped; then at most
  // max_tokens_per_node are kept (the best). Memory per lattice is bounded by that times the nodes.
  double beam = std::numeric_limits<double>::infinity();
  int64_t max_tokens_per_node = 1000;
  int64_t n_best = 1;        // distinct word sequences kept, best first
  bool lattice_out = false;  // also give the expanded lattice with the new scores (LatticeResult::rescored)
};

// One path of the n-best: its arcs (indices into Lattice::arcs), its final state's entry, and its numbers
// as `rescore` gives them to the hypothesis `hyp` with the path's score totals.
struct LatticePath {
  std::vector<size_t> arcs;
  size_t final = 0;
  Hypothesis hyp;  // utt = the lattice's key, n (1-based rank), text, scores (the path's totals)
  HypothesisScore score;
};

struct LatticeStats {
  int64_t lattices = 0, arcs = 0;
  int64_t steps = 0;      // LSTM steps run (a step: one input fed, one target scored)
  int64_t histories = 0;  // histories made (one per arc taken by a live history, plus the starts)
  int64_t merged = 0, pruned = 0;
  int64_t calls = 0;  // engine calls
};

struct LatticeResult {
  std::vector<LatticePath> nbest;  // best first
  // With lattice_out: the histories as a lattice (each a state; its arcs those of the lattice they took),
  // in the input's form; its LM score (Kaldi graph, SLF lm) is everything in the combination but the
  // acoustic term (see docs/rescoring.md).
  Lattice rescored;
};

class LatticeRescorer {
 public:
  // `engine` null: no LM (lm = 0 on every path; the lattice's own scores only). A model whose tokens are
  // not words is refused (UsageError): a lattice's arcs carry words.
  LatticeRescorer(Engine* engine, LatticeRescoreOptions opt);
  // Throws InputError "SOURCE:LINE: ..." for a word the OOV policy refuses, and UsageError for weights
  // that do not match the lattice's scores.
  LatticeResult rescore(const Lattice& lattice);
  const LatticeStats& stats() const { return stats_; }

 private:
  Engine* engine_;
  LatticeRescoreOptions opt_;
  LatticeStats stats_;
};

}  // namespace lstmlm::tasks
