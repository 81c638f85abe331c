// The fused fp32 LSTM step: the recurrent GEMM with the cell update in its epilogue, in registers. Compiled
// once per ISA, by the variant files (avx512.cpp, avx2.cpp, scalar.cpp, through variant.hpp); internal
// linkage like tiles.hpp, which it builds on.
#pragma once
#include "kernels/cell.hpp"
#include "kernels/fp32/tiles.hpp"

namespace lstmlm::kernels::fp32 {

namespace {

#if defined(LSTMLM_FP32_SUB_TILES)
// AVX2, 2+ rows (WebAssembly: every row count): the sub-panel tiles hold a few gates of the rows at a time,
// the cell needs all four: the panel's gates go through an L1-resident buffer (R x 64 floats, next to K x 64
// x R fmas). Out of line, the epilogue not unrolled over rows: inlined into lstm_rows, the extra code pushed
// the one-row path's tanh out of line and made batch 1 slower.
template <bool Peep, int R, int NP>
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
      const V16 zi = load(buf[r] + kLanes * format::kGateI), zf = load(buf[r] + kLanes * format::kGateF),
                zg = load(buf[r] + kLanes * format::kGateG), zo = load(buf[r] + kLanes * format::kGateO);
      V16 hn;
      if constexpr (Peep)
        hn = cell_peep(L, zi, zf, zg, zo, load(c[r] + unit), unit, kLanes, cn);
      else
        hn = cell(L, zi, zf, zg, zo, load(c[r] + unit), cn);
      store(c[r] + unit, cn);
      store(m[r] + unit, hn);
    }
  }
}
#endif

// The cell updates of a tile's panels from their gates in registers (acc[r]: NP panels of [i f g o]).
template <bool Peep, int R, int NP>
[[gnu::always_inline]] inline void panel_cells(V16 (&acc)[R][NP * kGates], float* const* c, float* const* m,
                                               const CellParams& L, int u) {
  if constexpr (Peep) {  // i and f need c before their gates: one cell after another
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < NP; ++p) {
        const int unit = (u + p) * kUnitBlock;
        const V16* z = acc[r] + kGates * p;
        V16 cn;
        const V16 hn = cell_peep(L, z[format::kGateI], z[format::kGateF], z[format::kGateG],
                                 z[format::kGateO], load(c[r] + unit), unit, kLanes, cn);
        store(c[r] + unit, cn);
        store(m[r] + unit, hn);
      }
    return;
  }
  // Every cell's gates, then every cell's update (cell.hpp: Gates): 15 ns per cell instead of 20 in a
  // microbenchmark of a 6-row tile's cells on an AMD EPYC.
  Gates a[R * NP];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < NP; ++p) {
      const V16* z = acc[r] + kGates * p;
      a[r * NP + p] = gates(L, z[format::kGateI], z[format::kGateF], z[format::kGateG], z[format::kGateO]);
    }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < NP; ++p) {
      const int unit = (u + p) * kUnitBlock;
      V16 cn;
      V16 hn = update(L, a[r * NP + p], load(c[r] + unit), cn);
      store(c[r] + unit, cn);
      store(m[r] + unit, hn);
    }
}

// The cell updates of the tail panel's t units (t < 16) from its gates in buf[r] ([i f g o] x t): through
// memory, to line each gate up with the units' lanes; lanes past t are neither read from c nor written.
template <bool Peep, int R, int Q>
[[gnu::always_inline]] inline void tail_cells(const float (&buf)[R][kLanes * Q], float* const* c,
                                              float* const* m, const CellParams& L, int unit, int t) {
  for (int r = 0; r < R; ++r) {
    V16 cn;
    auto gate = [&](int g) { return load_n(buf[r] + g * t, t, 0.0f); };
    const V16 cp = load_n(c[r] + unit, t, 0.0f);
    V16 hn;
    if constexpr (Peep)
      hn = cell_peep(L, gate(format::kGateI), gate(format::kGateF), gate(format::kGateG),
                     gate(format::kGateO), cp, unit, t, cn);
    else
      hn = cell(L, gate(format::kGateI), gate(format::kGateF), gate(format::kGateG), gate(format::kGateO), cp,
                cn);
    store_n(c[r] + unit, cn, t);
    store_n(m[r] + unit, hn, t);
  }
}

// A full block tile: panel u holds the [i f g o] x 16 gates of units 16u..16u+15, one vector per gate.
template <bool Peep, int R, int NP>
void lstm_tile(const float* const* h, const float* const* init, float* const* c, float* const* m,
               const PackedMat& w_hh, const CellParams& L, int u, [[maybe_unused]] bool first,
               Prefetch pf = {}) {
  static_assert(kPanelVectors == kGates);
#if defined(LSTMLM_FP32_SUB_TILES)
  if constexpr (R >= kSubRowsMin) {
    lstm_sub<Peep, R, NP>(h, init, c, m, w_hh, L, u, first);
    return;
  }
#endif
  V16 acc[R][NP * kGates];
  const int col = u * kPanel;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NP * kGates; ++q) acc[r][q] = load(init[r] + col + kLanes * q);
  accumulate<R, NP>(acc, h, w_hh.panel(u), static_cast<size_t>(w_hh.K) * kPanel, w_hh.K, pf);
  panel_cells<Peep, R, NP>(acc, c, m, L, u);
}

// The tail panel's t units (t < 16): the gates lie at [i f g o] x t, so they go through memory to line
// each gate up with the units' lanes; lanes past t are neither read from c nor written. Kept out of line:
// inlined into lstm_rows it cost 3.5% more instructions per step (callgrind, H 100, AVX2).
template <bool Peep, int R, int Q>
[[gnu::noinline, gnu::flatten]] void lstm_tail(const float* const* h, const float* const* init,
                                               float* const* c, float* const* m, const PackedMat& w_hh,
                                               const CellParams& L, [[maybe_unused]] bool first) {
  const int blocks = w_hh.full, col = blocks * kPanel, unit = blocks * kUnitBlock, t = L.H - unit;
  alignas(64) float buf[R][kLanes * Q];
#if defined(LSTMLM_FP32_SUB_TILES)
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
  tail_cells<Peep, R, Q>(buf, c, m, L, unit, t);
}

// One row's last tile with the tail panel in the same k loop (accumulate_with_tail; SEED, H 100: a
// one-vector tail alone took 6.6% of score at batch 1 in perf).
template <bool Peep, int NP, int Q>
[[gnu::noinline, gnu::flatten]] void lstm_tile_tail(const float* const* h, const float* const* init,
                                                    float* const* c, float* const* m, const PackedMat& w_hh,
                                                    const CellParams& L, int u) {
  constexpr int N = NP * kGates;
  V16 all[N + Q];
  accumulate_with_tail<NP, Q>(all, h[0], init[0], w_hh, u);
  V16 acc[1][N];
  for (int q = 0; q < N; ++q) acc[0][q] = all[q];
  panel_cells<Peep, 1, NP>(acc, c, m, L, u);
  const int unit = w_hh.full * kUnitBlock;
  alignas(64) float buf[1][kLanes * Q];
  for (int q = 0; q < Q; ++q) store(buf[0] + kLanes * q, all[N + q]);
  tail_cells<Peep, 1, Q>(buf, c, m, L, unit, L.H - unit);
}

template <bool Peep>
void lstm_rows_of(int rows, const float* const* h_prev, const float* const* init, float* const* c,
                  float* const* m, const PackedMat& w_hh, const CellParams& L, int part, int parts) {
  const PanelRange pr = panel_range(w_hh, part, parts);
  bool tail_done = false;
  tiles(rows, pr.first, pr.last, [&]<int R, int NP>(int r, int u) {
#if !defined(LSTMLM_SIMD_WASM128)
    // A lone row's last tile takes the tail panel along (lstm_tile_tail).
    if constexpr (R == 1)
      if (rows == 1 && pr.has_tail && u + NP == pr.last) {
        tail_done = true;
        switch (w_hh.tail) {
          case 1:
            return lstm_tile_tail<Peep, NP, 1>(h_prev, init, c, m, w_hh, L, u);
          case 2:
            return lstm_tile_tail<Peep, NP, 2>(h_prev, init, c, m, w_hh, L, u);
          case 3:
            return lstm_tile_tail<Peep, NP, 3>(h_prev, init, c, m, w_hh, L, u);
          default:
            return lstm_tile_tail<Peep, NP, 4>(h_prev, init, c, m, w_hh, L, u);
        }
      }
#endif
    lstm_tile<Peep, R, NP>(h_prev + r, init + r, c + r, m + r, w_hh, L, u, r == 0,
                           next_panel(w_hh, u, r, rows, pr));
  });
  if (pr.has_tail && !tail_done)
    tail_tiles(rows, w_hh.tail, [&]<int R, int Q>(int r) {
      lstm_tail<Peep, R, Q>(h_prev + r, init + r, c + r, m + r, w_hh, L, r == 0);
    });
}

// gates = init[r] + h_prev[r] W_hh^T (gate-blocked), then the cell update: c[r] in place, m[r] = o tanh(c),
// for the units of part `part` of `parts` of the panels (panel_range). A layer with peepholes runs its own
// instantiation, so the others' code is the same as without them.
void lstm_rows(int rows, const float* const* h_prev, const float* const* init, float* const* c,
               float* const* m, const PackedMat& w_hh, const CellParams& L, int part = 0, int parts = 1) {
  if (has_peepholes(L))
    lstm_rows_of<true>(rows, h_prev, init, c, m, w_hh, L, part, parts);
  else
    lstm_rows_of<false>(rows, h_prev, init, c, m, w_hh, L, part, parts);
}

}  // namespace

}  // namespace lstmlm::kernels::fp32
