// Register-tiled GEMM over packed panels (panels.hpp), the core of every fp32 kernel. Every output element
// is one fma chain in ascending k starting from its init value, computed by the same instructions whatever
// the number of rows, their order or the tile they fall in: results are bit-identical for a row alone or
// in any batch. Rows are passed as pointer arrays so a caller can gather them (table rows, active rows)
// without copies.
//
// Internal linkage on purpose: each backend file includes this header compiled for its own ISA, and the
// tile shapes differ between ISAs (one definition per translation unit, never shared at link time).
#pragma once
#include <algorithm>

#include "kernels/fp32/panels.hpp"
#include "kernels/simd.hpp"

namespace lstmlm::kernels::fp32 {

namespace {

using namespace simd;

// Register tiles are R rows x NP panels (64 columns each). Many rows: 6 rows x 1 panel = 24 zmm
// accumulators, each panel load reused by 6 rows. Few rows (batch 1, remainders): more panels per tile, so
// that enough independent fma chains are in flight to hide the fma latency. AVX2 has 16 ymm registers:
// one row x one panel (8 ymm accumulators) there. The tile shape never changes what an element computes.
#if defined(LSTMLM_SIMD_AVX512)
constexpr int kTileRows = 6;
constexpr int kAccumulators = 24;  // in V16 units (of 32 zmm: 24 accumulators, 4 weights, broadcasts)
#else
constexpr int kTileRows = 1;
constexpr int kAccumulators = 4;
#endif

// NP panels of W vectors each (full panels: W = 4, the k-rows 64 floats apart; the tail panel: NP = 1,
// W = its width in vectors, the k-rows 16 W floats apart).
template <int R, int NP, int W = kPanelVectors>
inline void accumulate(V16 (&acc)[R][NP * W], const float* const* a, const float* panel, size_t panel_stride,
                       int K) {
  for (int k = 0; k < K; ++k) {
    V16 w[NP * W];
    for (int p = 0; p < NP; ++p) {
      const float* wk = panel + p * panel_stride + static_cast<size_t>(k) * (kLanes * W);
      for (int q = 0; q < W; ++q) {
        w[p * W + q] = load(wk + kLanes * q);
        if constexpr (R > 1) pin(w[p * W + q]);
      }
    }
    for (int r = 0; r < R; ++r) {
      V16 x = set1(a[r][k]);
      for (int q = 0; q < NP * W; ++q) acc[r][q] = fma(x, w[q], acc[r][q]);
    }
  }
}

template <int R, int NP>
void gemm_tile(const float* const* a, const float* const* init, float* const* out, const PackedMat& w,
               int p) {
  V16 acc[R][NP * kPanelVectors];
  const int col = p * kPanel;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NP * kPanelVectors; ++q) acc[r][q] = load(init[r] + col + kLanes * q);
  accumulate<R, NP>(acc, a, w.panel(p), static_cast<size_t>(w.K) * kPanel, w.K);
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NP * kPanelVectors; ++q) store(out[r] + col + kLanes * q, acc[r][q]);
}

// The tail panel: R rows x Q vectors at column kPanel * full.
template <int R, int Q>
void gemm_tail(const float* const* a, const float* const* init, float* const* out, const PackedMat& w) {
  V16 acc[R][Q];
  const int col = w.full * kPanel;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < Q; ++q) acc[r][q] = load(init[r] + col + kLanes * q);
  accumulate<R, 1, Q>(acc, a, w.panel(w.full), 0, w.K);
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < Q; ++q) store(out[r] + col + kLanes * q, acc[r][q]);
}

// Calls f.operator()<rem>() for the rows left after the full row tiles (rem < kTileRows, a template
// argument so that each remainder gets its own register tile).
template <class F>
void for_remainder(int rem, F&& f) {
  if constexpr (kTileRows > 1) {
    switch (rem) {
      case 1:
        f.template operator()<1>();
        break;
      case 2:
        f.template operator()<2>();
        break;
      case 3:
        f.template operator()<3>();
        break;
      case 4:
        f.template operator()<4>();
        break;
      case 5:
        f.template operator()<5>();
        break;
      default:
        break;
    }
  }
}

// Runs Tail<R, Q>(row offset) over all rows for a tail panel of q vectors (1..4): full row tiles, then
// the remainder.
template <class Run>
void tail_tiles(int rows, int q, Run&& run) {
  auto with_q = [&]<int R>(int r) {
    switch (q) {
      case 1:
        run.template operator()<R, 1>(r);
        break;
      case 2:
        run.template operator()<R, 2>(r);
        break;
      case 3:
        run.template operator()<R, 3>(r);
        break;
      case 4:
        run.template operator()<R, 4>(r);
        break;
      default:
        break;
    }
  };
  const int full = rows / kTileRows * kTileRows;
  for (int r = 0; r < full; r += kTileRows) with_q.template operator()<kTileRows>(r);
  for_remainder(rows - full, [&]<int R>() { with_q.template operator()<R>(full); });
}

// Runs Tile<R, NP>(row offset, panel) over rows x panels [first, panels): full row tiles with panels
// outside (a panel stays in cache across the row tiles), then the remaining rows with wider tiles.
template <class Run>
void tiles(int rows, int first, int panels, Run&& run) {
  const int full = rows / kTileRows * kTileRows;
  for (int p = first; p < panels; ++p)
    for (int r = 0; r < full; r += kTileRows) run.template operator()<kTileRows, 1>(r, p);
  const int rem = rows - full;
  // Widest tile that fits the accumulators first, then narrower ones for the panels left over
  // (7 panels at batch 1: 4 + 3, not 4 + 1 + 1 + 1, whose lone chains would wait on fma latency).
  auto narrow = [&]<int R>() {
    constexpr int NP = std::clamp(kAccumulators / (kPanelVectors * R), 1, 4);
    int p = first;
    for (; p + NP <= panels; p += NP) run.template operator()<R, NP>(full, p);
    if constexpr (NP >= 4)
      if (p + 3 <= panels) {
        run.template operator()<R, 3>(full, p);
        p += 3;
      }
    if constexpr (NP >= 3)
      if (p + 2 <= panels) {
        run.template operator()<R, 2>(full, p);
        p += 2;
      }
    for (; p < panels; ++p) run.template operator()<R, 1>(full, p);
  };
  for_remainder(rem, narrow);
}

// The panels [first, last) of part `part` of `parts` of a matrix's panels (the tail panel, index w.full,
// counts as one and falls to the last part): a pure function of its arguments, contiguous, and together
// the parts cover every panel once. Some parts are empty when there are fewer panels than parts.
struct PanelRange {
  int first = 0, last = 0;
  bool has_tail = false;  // the range ends with the tail panel
};
inline PanelRange panel_range(const PackedMat& w, int part, int parts) {
  const long total = w.full + (w.tail > 0 ? 1 : 0);
  const int first = static_cast<int>(total * part / parts),
            last = static_cast<int>(total * (part + 1) / parts);
  return {first, std::min(last, w.full), last > w.full};
}

// out[r][j] = init[r][j] + sum_{k<K} a[r][k] * W[k][j] for every column of part `part` of `parts` of w
// (panel_range), r < rows. init[r] may point to a shared row (a bias). out[r] must have room for w.Np
// columns.
inline void gemm_rows(int rows, const float* const* a, const float* const* init, float* const* out,
                      const PackedMat& w, int part = 0, int parts = 1) {
  const PanelRange pr = panel_range(w, part, parts);
  tiles(rows, pr.first, pr.last,
        [&]<int R, int NP>(int r, int p) { gemm_tile<R, NP>(a + r, init + r, out + r, w, p); });
  if (pr.has_tail)
    tail_tiles(rows, w.tail, [&]<int R, int Q>(int r) { gemm_tail<R, Q>(a + r, init + r, out + r, w); });
}

}  // namespace

}  // namespace lstmlm::kernels::fp32
