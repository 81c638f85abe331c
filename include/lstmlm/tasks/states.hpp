// The recurrent state after each token a line feeds, per layer (docs/scoring.md#hidden-states): for probing a
// model and for regressions on its hidden units. The tokens are score's (the same tokenization, start token,
// line end, OOV rules and sentence or document mode); the states are the bits scoring computes, the engine
// advancing the lines' rows a token at a time together.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::tasks {

// One line's tokens and the states after each: row t of h[k] (and c[k]) is layer k after token t.
struct LineStates {
  uint64_t line = 0;  // 1-based, within its source
  bool skipped = false;
  std::vector<int32_t> ids;  // fed: the start token first where a line starts from it, the line end last
  std::vector<std::string> tokens;  // their vocabulary strings
  std::vector<MatrixRM> h;          // per layer [ids x output width]
  std::vector<MatrixRM> c;          // per layer [ids x hidden width]; empty for a layer without a cell state
};

class StateReader {
 public:
  // `opt` as for the Scorer; windows, the cache, measures and word aggregation do not apply (UsageError).
  StateReader(Engine& engine, ScoreOptions opt);
  // The states of a block of lines; document mode carries the state (and feeds no start token again).
  std::vector<LineStates> read(const std::vector<std::string>& lines, const std::string& source,
                               uint64_t first_line, const std::vector<LineEnd>& ends = {});

 private:
  Engine* engine_;
  ScoreOptions opt_;
  int32_t start_ = -1;
  State doc_state_;
  bool doc_started_ = false;
};

}  // namespace lstmlm::tasks
