// The fp32 LSTM layer: W_ih and W_hh packed gate-blocked (panels.hpp), one fused kernel per step (the
// recurrent GEMM with the cell update in its epilogue, in registers), then the projection when the layer
// has one. c = f c + i g (clipped), m = o tanh(c), h = W_hr m or m.
#include <algorithm>
#include <stdexcept>

#include "kernels/cell.hpp"
#include "kernels/fp32/layers.hpp"
#include "kernels/fp32/tiles.hpp"

namespace lstmlm::kernels::fp32 {

namespace {

#if defined(LSTMLM_SIMD_AVX2)
// AVX2, 2+ rows: the sub-panel tiles hold a few gates of the rows at a time, the cell needs all four: the
// panel's gates go through an L1-resident buffer (R x 64 floats, next to K x 64 x R fmas). Out of line,
// the epilogue not unrolled over rows: inlined into lstm_rows, the extra code pushed the one-row path's
// tanh out of line and made batch 1 slower.
template <int R, int NP>
[[gnu::noinline, gnu::flatten]] void lstm_sub(const float* const* h, const float* const* init,
                                              float* const* c, float* const* m, const PackedMat& w_hh,
                                              const CellParams& L, int u, bool first) {
  for (int p = 0; p < NP; ++p) {
    const int col = (u + p) * kPanel, unit = (u + p) * kUnitBlock;
    alignas(64) float buf[R][kPanel];
    float* z[R];
    for (int r = 0; r < R; ++r) z[r] = buf[r];
    sub_tiles<R>(h, init, col, z, 0, w_hh.panel(u + p), 2 * kPanelVectors, w_hh.K, first);
#pragma GCC unroll 1
    for (int r = 0; r < R; ++r) {
      V16 cn;
      V16 hn = cell(L, load(buf[r] + kLanes * format::kGateI), load(buf[r] + kLanes * format::kGateF),
                    load(buf[r] + kLanes * format::kGateG), load(buf[r] + kLanes * format::kGateO),
                    load(c[r] + unit), cn);
      store(c[r] + unit, cn);
      store(m[r] + unit, hn);
    }
  }
}
#endif

// A full block tile: panel u holds the [i f g o] x 16 gates of units 16u..16u+15, one vector per gate.
template <int R, int NP>
void lstm_tile(const float* const* h, const float* const* init, float* const* c, float* const* m,
               const PackedMat& w_hh, const CellParams& L, int u, [[maybe_unused]] bool first) {
  static_assert(kPanelVectors == kGates);
#if defined(LSTMLM_SIMD_AVX2)
  if constexpr (R >= kSubRowsMin) {
    lstm_sub<R, NP>(h, init, c, m, w_hh, L, u, first);
    return;
  }
#endif
  V16 acc[R][NP * kGates];
  const int col = u * kPanel;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NP * kGates; ++q) acc[r][q] = load(init[r] + col + kLanes * q);
  accumulate<R, NP>(acc, h, w_hh.panel(u), static_cast<size_t>(w_hh.K) * kPanel, w_hh.K);
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < NP; ++p) {
      const int unit = (u + p) * kUnitBlock;
      const V16* z = acc[r] + kGates * p;
      V16 cn;
      V16 hn = cell(L, z[format::kGateI], z[format::kGateF], z[format::kGateG], z[format::kGateO],
                    load(c[r] + unit), cn);
      store(c[r] + unit, cn);
      store(m[r] + unit, hn);
    }
}

// The tail panel's t units (t < 16): the gates lie at [i f g o] x t, so they go through memory to line
// each gate up with the units' lanes; lanes past t are neither read from c nor written. Kept out of line:
// inlined into lstm_rows it cost 3.5% more instructions per step (callgrind, H 100, AVX2).
template <int R, int Q>
[[gnu::noinline, gnu::flatten]] void lstm_tail(const float* const* h, const float* const* init,
                                               float* const* c, float* const* m, const PackedMat& w_hh,
                                               const CellParams& L, [[maybe_unused]] bool first) {
  const int blocks = w_hh.full, col = blocks * kPanel, unit = blocks * kUnitBlock, t = L.H - unit;
  alignas(64) float buf[R][kLanes * Q];
#if defined(LSTMLM_SIMD_AVX2)
  if constexpr (R >= kSubRowsMin) {
    float* z[R];
    for (int r = 0; r < R; ++r) z[r] = buf[r];
    sub_tiles<R>(h, init, col, z, 0, w_hh.panel(blocks), 2 * Q, w_hh.K, first);
  } else
#endif
  {
    V16 acc[R][Q];
    for (int r = 0; r < R; ++r)
      for (int q = 0; q < Q; ++q) acc[r][q] = load(init[r] + col + kLanes * q);
    accumulate<R, 1, Q>(acc, h, w_hh.panel(blocks), 0, w_hh.K);
    for (int r = 0; r < R; ++r)
      for (int q = 0; q < Q; ++q) store(buf[r] + kLanes * q, acc[r][q]);
  }
  for (int r = 0; r < R; ++r) {
    V16 cn;
    auto gate = [&](int g) { return load_n(buf[r] + g * t, t, 0.0f); };
    V16 hn = cell(L, gate(format::kGateI), gate(format::kGateF), gate(format::kGateG), gate(format::kGateO),
                  load_n(c[r] + unit, t, 0.0f), cn);
    store_n(c[r] + unit, cn, t);
    store_n(m[r] + unit, hn, t);
  }
}

// gates = init[r] + h_prev[r] W_hh^T (gate-blocked), then the cell update: c[r] in place, m[r] = o tanh(c),
// for the units of part `part` of `parts` of the panels (panel_range).
void lstm_rows(int rows, const float* const* h_prev, const float* const* init, float* const* c,
               float* const* m, const PackedMat& w_hh, const CellParams& L, int part = 0, int parts = 1) {
  const PanelRange pr = panel_range(w_hh, part, parts);
  tiles(rows, pr.first, pr.last, [&]<int R, int NP>(int r, int u) {
    lstm_tile<R, NP>(h_prev + r, init + r, c + r, m + r, w_hh, L, u, r == 0);
  });
  if (pr.has_tail)
    tail_tiles(rows, w_hh.tail, [&]<int R, int Q>(int r) {
      lstm_tail<R, Q>(h_prev + r, init + r, c + r, m + r, w_hh, L, r == 0);
    });
}

class Lstm final : public RecurrentLayer {
 public:
  explicit Lstm(const LstmWeights& w)
      : in_(w.input),
        out_(w.proj > 0 ? w.proj : w.hidden),
        Hp_(round_up(w.hidden, kUnitBlock)),
        G_(gate_columns(w.hidden)),
        cell_{w.hidden, w.activation, w.cell_clip, w.cell_activation} {
    const int H = w.hidden;
    w_hh_ = pack_gates(w.w_hh, H, out_);
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
    gemm_rows(rows, x, s.init.data(), term, w_ih_, part, parts);
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
      lstm_rows(rows, h_prev, term, memory, h_out, w_hh_, cell_);
      return;
    }
    // m = o tanh(c) goes to scratch, then h = W_hr m (a GEMM from a zero init).
    const size_t n = static_cast<size_t>(rows);
    s.floats.resize(std::max(s.floats.size(), n * size_t(Hp_)));
    s.out.resize(n);
    s.in.resize(n);
    s.init.assign(n, zero_row_.data());
    for (size_t r = 0; r < n; ++r) s.in[r] = s.out[r] = s.floats.data() + r * size_t(Hp_);
    lstm_rows(rows, h_prev, term, memory, s.out.data(), w_hh_, cell_);
    gemm_rows(rows, s.in.data(), s.init.data(), h_out, w_hr_);
  }

  // Phase 0: the cell update over a part of the units (m into mid when projected); phase 1: h = W_hr m
  // over a part of h's columns, the same GEMM as in step().
  int step_phases() const override { return projected() ? 2 : 1; }
  int mid_stride() const override { return projected() ? Hp_ : 0; }
  void step_part(int phase, int part, int parts, int rows, const float* const* h_prev,
                 const float* const* term, float* const* memory, float* const* h_out, float* const* mid,
                 Scratch& s) const override {
    if (phase == 0) {
      lstm_rows(rows, h_prev, term, memory, projected() ? mid : h_out, w_hh_, cell_, part, parts);
      return;
    }
    const size_t n = static_cast<size_t>(rows);
    s.in.assign(mid, mid + n);
    s.init.assign(n, zero_row_.data());
    gemm_rows(rows, s.in.data(), s.init.data(), h_out, w_hr_, part, parts);
  }
  size_t step_bytes() const override { return w_hh_.bytes() + w_hr_.bytes(); }
  size_t term_bytes() const override { return w_ih_.bytes(); }

  size_t bytes() const override {
    return w_ih_.bytes() + w_hh_.bytes() + bias_.size() * sizeof(float) + w_hr_.bytes();
  }

 private:
  bool projected() const { return !w_hr_.data.empty(); }
  int in_, out_, Hp_, G_;
  CellParams cell_;
  PackedMat w_ih_;  // [in, G]; empty when the caller folds the input term into a table
  PackedMat w_hh_;  // [out, G]
  FloatBuf bias_;   // [G]
  PackedMat w_hr_;  // [H, P] when projected
  // The projection's init row (h = 0 + W_hr m), made once rather than zeroed every step. Not counted in
  // bytes(): like the engine scratch row it replaces, it is no copy of the weights.
  FloatBuf zero_row_;
};

}  // namespace

std::unique_ptr<RecurrentLayer> make_lstm(const LstmWeights& w) { return std::make_unique<Lstm>(w); }

}  // namespace lstmlm::kernels::fp32
