// The fp32 LSTM layer: W_ih and W_hh packed gate-blocked (panels.hpp), one fused kernel per step (the
// recurrent GEMM with the cell update in its epilogue, in registers: lstm_step.hpp, in the ISA's variant
// of kernels.hpp), then the projection when the layer has one. c = f c + i g (clipped), m = o tanh(c), h =
// W_hr m or m.
#include <algorithm>
#include <stdexcept>

#include "kernels/fp32/kernels.hpp"
#include "kernels/fp32/layers.hpp"

namespace lstmlm::kernels::fp32 {

namespace {

class Lstm final : public RecurrentLayer {
 public:
  Lstm(const LstmWeights& w, const Kernels& k)
      : k_(k),
        in_(w.input),
        out_(w.proj > 0 ? w.proj : w.hidden),
        Hp_(round_up(w.hidden, kUnitBlock)),
        G_(gate_columns(w.hidden)),
        cell_{w.hidden, w.activation, w.cell_clip, w.cell_activation},
        proj_clip_(w.proj_clip) {
    const int H = w.hidden;
    // The peepholes by unit, padded to the panels' units with zeros (never read past H).
    auto peephole = [&](const float* v, FloatBuf& to) -> const float* {
      if (!v) return nullptr;
      to.assign(static_cast<size_t>(Hp_), 0.0f);
      std::copy(v, v + H, to.begin());
      return to.data();
    };
    cell_.ci = peephole(w.w_ci, ci_);
    cell_.cf = peephole(w.w_cf, cf_);
    cell_.co = peephole(w.w_co, co_);
    w_hh_ = pack_gates(w.w_hh, H, out_);
    w_hh_zero_ = {0, w_hh_.N, w_hh_.Np, w_hh_.full, w_hh_.tail, {}};
    // Never read, but every panel pointer the tiles derive from it then points into an allocation.
    w_hh_zero_.data.assign(static_cast<size_t>(kPanel), 0.0f);
    if (w.w_ih) w_ih_ = pack_gates(w.w_ih, H, in_);
    bias_.assign(static_cast<size_t>(G_), 0.0f);
    for (int g = 0; g < kGates; ++g)
      for (int u = 0; u < H; ++u) bias_[static_cast<size_t>(gate_col(g, u, H))] = w.bias[g * H + u];
    if (w.proj > 0) {
      w_hr_ = pack_transposed(w.w_hr, w.proj, H);
      zero_row_.assign(static_cast<size_t>(w_hr_.Np), 0.0f);
    }
  }

  int input_width() const override { return in_; }
  int output_width() const override { return out_; }
  int memory_width() const override { return cell_.H; }
  int output_stride() const override { return projected() ? w_hr_.Np : Hp_; }
  int memory_stride() const override { return Hp_; }
  int term_width() const override { return G_; }

  void input_term(int rows, const float* const* x, float* const* term, Scratch& s) const override {
    input_term_part(0, 1, rows, x, term, s);
  }
  void input_term_part(int part, int parts, int rows, const float* const* x, float* const* term,
                       Scratch& s) const override {
    if (w_ih_.data.empty()) throw std::logic_error("lstm: input weights were folded into a table");
    s.init.assign(static_cast<size_t>(rows), bias_.data());
    k_.gemm_rows(rows, x, s.init.data(), term, w_ih_, part, parts);
  }

  void term_from_canonical(const double* z, float* term) const override {
    const int H = cell_.H;
    std::fill(term, term + G_, 0.0f);
    for (int g = 0; g < kGates; ++g)
      for (int u = 0; u < H; ++u) term[gate_col(g, u, H)] = static_cast<float>(z[g * H + u]);
  }

  void step(int rows, const float* const* h_prev, const float* const* term, float* const* memory,
            float* const* h_out, Scratch& s) const override {
    if (!projected()) {
      cells(rows, h_prev, term, memory, h_out, 0, 1);
      return;
    }
    // m = o tanh(c) goes to scratch, then h = W_hr m (a GEMM from a zero init).
    const size_t n = static_cast<size_t>(rows);
    s.floats.resize(std::max(s.floats.size(), n * size_t(Hp_)));
    s.out.resize(n);
    s.in.resize(n);
    s.init.assign(n, zero_row_.data());
    for (size_t r = 0; r < n; ++r) s.in[r] = s.out[r] = s.floats.data() + r * size_t(Hp_);
    cells(rows, h_prev, term, memory, s.out.data(), 0, 1);
    k_.gemm_rows(rows, s.in.data(), s.init.data(), h_out, w_hr_, 0, 1);
    clip(rows, h_out, 0, 1);
  }

  // Phase 0: the cell update over a part of the units (m into mid when projected); phase 1: h = W_hr m
  // over a part of h's columns, the same GEMM as in step(); phase 2: the projection clip, over a part of
  // h's units.
  int step_phases() const override { return projected() ? (proj_clip_ ? 3 : 2) : 1; }
  int mid_stride() const override { return projected() ? Hp_ : 0; }
  void step_part(int phase, int part, int parts, int rows, const float* const* h_prev,
                 const float* const* term, float* const* memory, float* const* h_out, float* const* mid,
                 Scratch& s) const override {
    if (phase == 0) {
      cells(rows, h_prev, term, memory, projected() ? mid : h_out, part, parts);
      return;
    }
    if (phase == 2) {
      clip(rows, h_out, part, parts);
      return;
    }
    const size_t n = static_cast<size_t>(rows);
    s.in.assign(mid, mid + n);
    s.init.assign(n, zero_row_.data());
    k_.gemm_rows(rows, s.in.data(), s.init.data(), h_out, w_hr_, part, parts);
  }
  size_t step_bytes() const override { return w_hh_.bytes() + w_hr_.bytes(); }
  size_t term_bytes() const override { return w_ih_.bytes(); }

  size_t bytes() const override {
    return w_ih_.bytes() + w_hh_.bytes() +
           (bias_.size() + ci_.size() + cf_.size() + co_.size()) * sizeof(float) + w_hr_.bytes();
  }

 private:
  bool projected() const { return !w_hr_.data.empty(); }
  // h clipped to [-proj_clip, proj_clip] (TF1's proj_clip), the units of part `part` of `parts`; min and
  // max are exact, so plain code gives every ISA's bits.
  void clip(int rows, float* const* h, int part, int parts) const {
    if (!proj_clip_) return;
    const float c = *proj_clip_;
    const int P = out_, begin = P * part / parts, end = P * (part + 1) / parts;
    for (int r = 0; r < rows; ++r)
      for (int j = begin; j < end; ++j) h[r][j] = std::clamp(h[r][j], -c, c);
  }
  // The fused step over the units of part `part`. Zero h_prev rows (null) run W_hh's zero-depth view:
  // the tiles start from the input term and read no weight and no h (the term rows stand in for the
  // unread h_prev pointers).
  void cells(int rows, const float* const* h_prev, const float* const* term, float* const* memory,
             float* const* m, int part, int parts) const {
    k_.lstm_rows(rows, h_prev ? h_prev : term, term, memory, m, h_prev ? w_hh_ : w_hh_zero_, cell_, part,
                 parts);
  }
  const Kernels& k_;
  int in_, out_, Hp_, G_;
  CellParams cell_;
  std::optional<float> proj_clip_;
  FloatBuf ci_, cf_, co_;  // the peepholes cell_ points to, [Hp] each, or empty
  PackedMat w_ih_;         // [in, G]; empty when the caller folds the input term into a table
  PackedMat w_hh_;         // [out, G]
  PackedMat w_hh_zero_;    // [0, G]: W_hh's panels without their inputs
  FloatBuf bias_;          // [G]
  PackedMat w_hr_;         // [H, P] when projected
  // The projection's init row (h = 0 + W_hr m), made once rather than zeroed every step. Not counted in
  // bytes(): like the engine scratch row it replaces, it is no copy of the weights.
  FloatBuf zero_row_;
};

}  // namespace

std::unique_ptr<RecurrentLayer> make_lstm(const LstmWeights& w, const Kernels& k) {
  return std::make_unique<Lstm>(w, k);
}

}  // namespace lstmlm::kernels::fp32
