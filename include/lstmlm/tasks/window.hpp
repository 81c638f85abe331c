// Fixed input windows (docs/scoring.md, "Fixed input windows (Keras)"): a Keras next-word app pre-pads (or
// truncates) the context to the model's input length before every model.predict, so the LSTM runs from the
// zero state over exactly that window. WindowedPredictor gives those numbers for many contexts at once.
//  - Pad N: the last N tokens of the context, pre-padded with the model's pad id (tokenizer.pad_id, else 0)
//    to exactly N (Keras pad_sequences(maxlen=N, padding='pre', truncating='pre')).
//  - Window N: the last min(len, N) tokens, no padding.
//  - Stateful: no window (the tasks' ordinary state carrying; WindowedPredictor is not used).
// The padded prefix is the same for every context: the states after j pads are checkpointed (PadStates:
// every `stride` pads, lazily, up to the largest j needed; stride 1 up to windows of 256) and a row starts
// from the checkpoint at or below its pad count, feeding the few remaining pads and its real tokens. A
// predictor keeps them for its life, or shares a PadStates of the caller's across calls (the C API's
// model: a context predicted alone does not run its pads again). The engine is batch- and
// chunk-invariant, so every number equals the naive run of the N padded ids from the zero state, bit for
// bit, whatever the batch size, the rows batched together and the thread count.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
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

// The states after 0, stride, 2 stride, ... pad ids from the zero state, computed when first asked for.
// Every engine of the model with the same precision and layer-0 layout (EngineOptions::precision, fold)
// computes the same bits, so one PadStates serves all such engines (and every thread: it locks); engines of
// another precision or layout need their own.
// A window length whose PadStates keeps a state per pad count (stride 1): one instance serves every
// Pad window up to this length, whatever its length (the states after j pads do not depend on it).
inline constexpr int kPadStatesWholeStride = 256;

class PadStates {
 public:
  PadStates(const Model& model, int window_length);
  // 1 up to windows of 256; longer ones keep about 256 checkpoints (bounded memory), and a row feeds
  // fewer than stride extra pads.
  static size_t stride_for(int window_length);
  int32_t pad() const { return pad_; }
  size_t stride() const { return stride_; }
  // The state after index * stride() pads (computed with `engine` up to there when missing).
  State at(Engine& engine, size_t index);

 private:
  std::mutex mu_;
  int32_t pad_;
  size_t stride_;
  std::deque<State> states_;  // [0] = zeros
};

class WindowedPredictor {
 public:
  // w must be windowed (Pad or Window; checked). batch_size: rows per engine call. pads: the caller's
  // PadStates of this model and window length to share (null, or another length's: the predictor's own).
  WindowedPredictor(Engine& engine, WindowOptions w, int batch_size = 64,
                    std::shared_ptr<PadStates> pads = nullptr);

  // For each context (the tokens so far), ln p(next) over the vocabulary after its window: out is
  // [contexts, V], in input order. An empty context gives, with Pad, the distribution after N pads, and
  // with Window the distribution from the zero state's h.
  void predict(const std::vector<std::span<const int32_t>>& contexts, MatrixRM& out);

  // The tokens a context's window holds (its last min(len, N)), and the pads before them (Pad only).
  std::span<const int32_t> window_of(std::span<const int32_t> context) const;
  size_t pads_before(std::span<const int32_t> context) const;

 private:
  Engine* engine_;
  WindowOptions w_;
  int32_t pad_ = 0;
  size_t batch_ = 64;
  std::shared_ptr<PadStates> pads_;
};

}  // namespace lstmlm::tasks
