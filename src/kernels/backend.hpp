// The seam between the engine and the kernels. A Backend is one precision on one ISA: it packs the
// canonical (PyTorch-layout) weights into a layout of its own, which nobody else reads, and runs the
// fused step of a recurrent layer and the output projection on it. The engine sees only row pointers
// and widths. A new precision or ISA is a new backend file plus a line in registry.cpp; a new cell type
// is a new RecurrentLayer implementation and its factory method.
//
// Contract of every backend (the engine's batch invariance rests on it): each output element of a row is
// computed by the same instructions in the same order whatever the number of rows, their order and which
// thread runs them, so a row's result is bit-identical alone or in any batch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/aligned.hpp"
#include "kernels/cpu.hpp"
#include "lstmlm/config.hpp"

namespace lstmlm::kernels {

// Grow-only scratch a layer may use during one call (pointer arrays, intermediate rows). One per
// calling thread; the layer owns its meaning.
struct Scratch {
  FloatBuf floats;
  // The generic cells' (kernels/cells) rows and pointer arrays, apart from what the linears they call use.
  FloatBuf cells;
  std::vector<const float*> cell_in;
  std::vector<float*> cell_out, cell_mid;
  ByteBuf bytes;  // the low-precision GEMMs' converted input rows
  std::vector<const float*> in, init;
  std::vector<float*> out, mid;
};

// A canonical weight matrix as a packer reads it: row r of `cols` floats, asked for in increasing r (a
// packer may go over the rows more than once). Either a row-major array in memory, or rows fetched on
// demand (the engine reads a model's file a block of rows at a time), so packing holds its packed layout
// and a block, never the whole float matrix. A fetched row stays valid until the next row() of the source.
class Rows {
 public:
  using Fetch = std::function<const float*(size_t row)>;
  Rows() = default;
  Rows(std::nullptr_t) {}                   // NOLINT: none, as a null pointer
  Rows(const float* data) : data_(data) {}  // NOLINT: a row-major array converts implicitly
  explicit Rows(Fetch fetch) : fetch_(std::move(fetch)) {}
  explicit operator bool() const { return data_ != nullptr || fetch_ != nullptr; }
  const float* row(size_t r, size_t cols) const { return data_ ? data_ + r * cols : fetch_(r); }
  // The rows from `first` on as a source of their own (a GRU's n block of W_hh).
  Rows from(size_t first, size_t cols) const {
    if (data_) return Rows(data_ + first * cols);
    Fetch f = fetch_;
    return Rows(Fetch([f, first](size_t r) { return f(first + r); }));
  }

 private:
  const float* data_ = nullptr;
  Fetch fetch_;
};

// Canonical weights of one LSTM layer: PyTorch's nn.LSTM tensors, gate order i, f, g, o.
struct LstmWeights {
  int input = 0, hidden = 0, proj = 0;  // proj = 0: no projection
  Rows w_ih;                            // [4 hidden, input]; none when the layer's input term is folded
  Rows w_hh;                            // [4 hidden, proj or hidden]
  const float* bias = nullptr;          // [4 hidden] (bias_ih + bias_hh)
  Rows w_hr;                            // [proj, hidden] when proj > 0
  RecurrentActivation activation = RecurrentActivation::Sigmoid;
  std::optional<float> cell_clip;
  Activation cell_activation = Activation::Tanh;
  // Peepholes [hidden] each (null: none) and the clip of the projected h: the fp32 kernels fuse them,
  // the low precisions run such a layer as the generic LSTM of kernels/cells.
  const float *w_ci = nullptr, *w_cf = nullptr, *w_co = nullptr;
  std::optional<float> proj_clip;
  bool plain() const { return !w_ci && !w_cf && !w_co && !proj_clip; }
};

// Canonical weights of one GRU layer: PyTorch's nn.GRU tensors, gate order r, z, n (docs/model-format.md).
struct GruWeights {
  int input = 0, hidden = 0;
  Rows w_ih;                       // [3 hidden, input]; none when the layer's input term is folded
  Rows w_hh;                       // [3 hidden, hidden]
  const float* bias = nullptr;     // [3 hidden], of the input term (reset_after: bias_ih; else both summed)
  const float* bias_hh = nullptr;  // [3 hidden] with reset_after (inside r's product), else null
  bool reset_after = true;
  RecurrentActivation activation = RecurrentActivation::Sigmoid;  // of r and z
  Activation cell_activation = Activation::Tanh;                  // of n
};

// Canonical weights of one simple RNN layer (nn.RNN, Keras SimpleRNN): h = act(W_ih x + W_hh h + bias).
struct RnnWeights {
  int input = 0, hidden = 0;
  Rows w_ih;                    // [hidden, input]; none when folded
  Rows w_hh;                    // [hidden, hidden]
  const float* bias = nullptr;  // [hidden] = bias_ih + bias_hh
  Activation activation = Activation::Tanh;
};

// A recurrent layer packed for one backend. Per row it keeps a memory vector (an LSTM's c; empty for a
// cell without one) and produces an output vector h, which is also the recurrent input of its next step.
class RecurrentLayer {
 public:
  virtual ~RecurrentLayer() = default;
  virtual int input_width() const = 0;   // floats of x read per row
  virtual int output_width() const = 0;  // meaningful floats of h
  virtual int memory_width() const = 0;  // meaningful floats of the memory vector
  // Floats a caller allocates per row for h and for the memory (>= the widths; the extra is padding the
  // layer may write but never reads back).
  virtual int output_stride() const = 0;
  virtual int memory_stride() const = 0;
  // Floats per row of the input term, the part of the step that depends on x only.
  virtual int term_width() const = 0;

  // term[r] = the input term of x[r] (for an LSTM: bias + W_ih x), in the layer's private order.
  virtual void input_term(int rows, const float* const* x, float* const* term, Scratch& s) const = 0;
  // Lays out one input term given in canonical order (for an LSTM: 4 hidden gates, i f g o, double) the
  // way input_term writes it: how a caller folds an input table once (layer 0's term per token).
  virtual void term_from_canonical(const double* canonical, float* term) const = 0;
  // One step of `rows` rows: memory[r] updated in place, h_out[r] written from h_prev[r] and term[r].
  // h_out[r] must not alias h_prev[r]. h_prev may be null: every row's h_prev is zero (a reset state),
  // and the results are those of zero rows, bit for bit; a layer may then skip the recurrent product
  // (with finite weights a zero row adds exactly 0 to every gate).
  virtual void step(int rows, const float* const* h_prev, const float* const* term, float* const* memory,
                    float* const* h_out, Scratch& s) const = 0;
  virtual size_t bytes() const = 0;

  // One call split across a team of threads (a batch with fewer rows than threads, bound by streaming
  // the weights): part p of `parts` computes only its own contiguous range of output columns, a pure
  // function of (layer, part, parts), each element by the same instructions as in the whole call, so the
  // parts together are bit-identical to it whatever `parts`. Parts run concurrently, each with its own
  // Scratch; together they cover every column once.
  virtual void input_term_part(int part, int parts, int rows, const float* const* x, float* const* term,
                               Scratch& s) const = 0;
  // A split step runs in step_phases() phases; every part of one phase finishes before any part of the
  // next starts (a projected LSTM needs all of m before h = W_hr m). The phases pass their results in
  // mid[r], mid_stride() floats per row, written and read by all the parts (0: no mid rows needed).
  virtual int step_phases() const = 0;
  virtual int mid_stride() const = 0;
  // h_prev may be null, as in step().
  virtual void step_part(int phase, int part, int parts, int rows, const float* const* h_prev,
                         const float* const* term, float* const* memory, float* const* h_out,
                         float* const* mid, Scratch& s) const = 0;
  // Bytes of weights a step streams (W_hh, and W_hr when projected) and an input term streams (W_ih, 0
  // when folded): what a caller weighs against the cost of splitting it.
  virtual size_t step_bytes() const = 0;
  virtual size_t term_bytes() const = 0;
};

// log(sum_j exp(x_j)) as the max and the log of the max-shifted sum: a log-prob is (z - max) - log_sum, as
// TensorFlow's log_softmax computes it. Adding max and log_sum first would round away everything below the
// max's ulp: with logits near 1e9 (ulp 64) every log-prob would be 0.
struct LogSumExp {
  float max = 0, log_sum = 0;
  float log_prob(float z) const { return (z - max) - log_sum; }
};

// The output layer: logits = bias + W h, then the pieces of a log-softmax.
class OutputLayer {
 public:
  virtual ~OutputLayer() = default;
  virtual int width() const = 0;   // V, meaningful logits per row
  virtual int stride() const = 0;  // floats a caller allocates per logits row
  virtual void logits(int rows, const float* const* h, float* const* out, Scratch& s) const = 0;
  // The logits of part `part` of `parts` of the columns, as RecurrentLayer::input_term_part.
  virtual void logits_part(int part, int parts, int rows, const float* const* h, float* const* out,
                           Scratch& s) const = 0;
  // Log-sum-exp of x[0..n), max-subtracted, the sum of exps accumulated in a fixed order.
  virtual LogSumExp log_sum_exp(const float* x) const = 0;
  // The logit of one column, bias + W[column] . h, for a score that needs no normaliser. By default the
  // whole row is computed; a backend that can read one column's weights alone does only that (the
  // difference from logits()' element is float rounding: the sums run in another order).
  virtual float logit(const float* h, int column, Scratch& s) const;
  virtual size_t bytes() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "<precision>/<isa>", e.g. "fp32/avx512": what bench and info report as having run.
  virtual std::string_view name() const = 0;
  virtual std::unique_ptr<RecurrentLayer> lstm(const LstmWeights& w) const = 0;
  // By default the generic cells of kernels/cells, over this backend's linear().
  virtual std::unique_ptr<RecurrentLayer> gru(const GruWeights& w) const;
  virtual std::unique_ptr<RecurrentLayer> rnn(const RnnWeights& w) const;
  // w: [rows, cols] row-major (PyTorch's nn.Linear weight), bias [rows].
  virtual std::unique_ptr<OutputLayer> linear(const Rows& w, int rows, int cols, const float* bias) const = 0;
  // Below how many rows per thread a batch runs faster split by columns (every thread all the rows, a
  // share of the weights) than by rows (every thread all the weights, a share of the rows). A few rows
  // per thread reuse each weight load too little to hide the stream: at MEDIUM batch 8 on 2 threads of an
  // AMD EPYC (Zen 5) the column split ran generate 2.0-2.4x faster than the row split and predict 1.1-1.2x
  // (fp32, bf16, int8), score the same; at batch 64 the row split was as fast or faster.
  virtual int column_split_rows() const { return 8; }
};

// The backend for a precision on the best level the CPU has, at most LSTMLM_ISA (cpu.hpp): fp32 at
// AVX-512, AVX2 or scalar, bf16 and int8 up to AMX. Throws UsageError for an unknown LSTMLM_ISA value,
// and for a precision refused there (refusal()).
const Backend& backend(Precision precision = Precision::Fp32);
// Why `precision` is refused on the best level the CPU has under LSTMLM_ISA, or empty: bf16 whose best
// level is AVX2, where each weight is widened to fp32 before its FMA and bf16 runs at about half fp32's
// speed (docs/precision.md).
std::string refusal(Precision precision);
// A precision at exactly `isa`, or null when the CPU lacks it or the precision has no kernels there
// (fp32 at Dot or Amx): how the tests run every level the machine has.
const Backend* backend_at(Precision precision, Isa isa);

}  // namespace lstmlm::kernels
