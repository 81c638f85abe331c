// Fixed input windows (docs/scoring.md, "Fixed input windows (Keras)"): a Keras next-word app pre-pads (or
// truncates) the context to the model's input length before every model.predict, so the LSTM runs from the
// zero state over exactly that window. WindowedPredictor gives those numbers for many contexts at once.
//  - Pad N: the last N tokens of the context, pre-padded with the model's pad id (tokenizer.pad_id, else 0)
//    to exactly N (Keras pad_sequences(maxlen=N, padding='pre', truncating='pre')).
//  - Window N: the last min(len, N) tokens, no padding.
//  - Stateful: no window (the tasks' ordinary state carrying; WindowedPredictor is not used).
// The padded prefix is the same for every context: the states after j pads are checkpointed once per
// predictor (every `stride` pads, lazily, up to the largest j needed) and a row starts from the checkpoint
// at or below its pad count, feeding the few remaining pads and its real tokens. The engine is batch- and
// chunk-invariant, so every number equals the naive run of the N padded ids from the zero state, bit for
// bit, whatever the batch size, the rows batched together and the thread count.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"

namespace lstmlm::tasks {

enum class WindowMode { Stateful, Pad, Window };

// The largest --pad-to / --window / config.json input_length.
inline constexpr int kMaxWindowLength = kMaxInputLength;

struct WindowOptions {
  WindowMode mode = WindowMode::Stateful;
  int length = 0;  // N, in [1, kMaxWindowLength] unless Stateful
  bool windowed() const { return mode != WindowMode::Stateful; }
};

// Throws UsageError naming the option when a windowed mode's length is outside [1, kMaxWindowLength].
void check_window(const WindowOptions& w);

// The pad id a Pad window uses: tokenizer.pad_id; else, for a one-hot model (embedding_dim 0), the zero
// input vector (the input id vocab_size, which only a one-hot model's engine takes), as Keras'
// pad_sequences pads a one-hot array; else 0 (pad_sequences' value).
int32_t window_pad_id(const Model& model);

// "--pad-to N" / "--window N" / "--stateful": how the window is spelled on the command line.
std::string window_flag(const WindowOptions& w);

class WindowedPredictor {
 public:
  // w must be windowed (Pad or Window; checked). batch_size: rows per engine call.
  WindowedPredictor(Engine& engine, WindowOptions w, int batch_size = 64);

  // For each context (the tokens so far), ln p(next) over the vocabulary after its window: out is
  // [contexts, V], in input order. An empty context gives, with Pad, the distribution after N pads, and
  // with Window the distribution from the zero state's h.
  void predict(const std::vector<std::span<const int32_t>>& contexts, MatrixRM& out);

  // The tokens a context's window holds (its last min(len, N)), and the pads before them (Pad only).
  std::span<const int32_t> window_of(std::span<const int32_t> context) const;
  size_t pads_before(std::span<const int32_t> context) const;

 private:
  const State& checkpoint(size_t index);  // the state after index * stride_ pads
  Engine* engine_;
  WindowOptions w_;
  int32_t pad_ = 0;
  size_t batch_ = 64;
  size_t stride_ = 16;
  std::vector<State> checkpoints_;  // [0] = zeros; [i] = after i * stride_ pads, computed up to need
};

}  // namespace lstmlm::tasks
