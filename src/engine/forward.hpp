// One thread's share of a batch through every layer and step: the engine's forward pass, in named stages.
#pragma once
#include <vector>

#include "engine/packed_model.hpp"
#include "engine/team.hpp"
#include "lstmlm/engine.hpp"

namespace lstmlm::engine {

enum class Mode { Advance, Score, Logprobs, Predict };

// What one engine call asks for, and where the results go.
struct Job {
  Mode mode = Mode::Advance;
  const Sequences* inputs = nullptr;
  const Sequences* targets = nullptr;
  std::vector<State>* states = nullptr;
  std::vector<std::vector<float>>* scores = nullptr;
  StepMeasures measures;  // Score mode: optional, beside the scores
  std::vector<MatrixRM>* logprobs = nullptr;
  MatrixRM* predict = nullptr;
  bool predict_logits = false;  // Predict mode: the logits, not the log-probs
};

// Per-thread scratch, grow-only: sized once per batch shape, reused by every later call.
struct Work {
  std::vector<int> rows;           // this thread's rows of the batch, longest first
  kernels::FloatBuf memory;        // [layer][row] memory vectors (an LSTM's c)
  kernels::FloatBuf last_h;        // [layer][row] latest output: the state in, carried across chunks, out
  kernels::FloatBuf out_a, out_b;  // [step][row] one layer's outputs over a chunk (the next layer's input)
  kernels::FloatBuf terms;         // [step][row] input terms of a chunk
  kernels::FloatBuf logits;        // [row] of one decoder group
  kernels::FloatBuf head;          // [row] the output head's layers of one decoder group (format v2)
  std::vector<const float*> head_rows;
  std::vector<const float*> x_rows;  // inputs of an input-term GEMM / hidden rows to decode
  std::vector<const float*> h_rows;  // previous outputs of a step
  std::vector<const float*> term_rows;
  std::vector<float*> out_rows, mem_rows;
  std::vector<int> dec_row, dec_step;  // the (row, step) each decoded hidden row belongs to
  kernels::FloatBuf mid;               // [row] a split step's rows between its phases
  std::vector<float*> mid_rows;
  kernels::Scratch scratch;  // the kernels' own
};

// Each operation's columns split across a team (engine/team.hpp) when the weights it streams are at least
// min_bytes; no team: everything on the calling thread. The results are the same bits either way.
struct Split {
  Team* team = nullptr;
  size_t min_bytes = 0;
};

// Runs w.rows of `job` (rows sorted longest first) through the model.
void forward(const PackedModel& pm, Work& w, const Job& job, const Split& split = {});

}  // namespace lstmlm::engine
