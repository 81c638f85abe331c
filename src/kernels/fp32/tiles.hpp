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
// that enough independent fma chains are in flight to hide the fma latency. AVX2 has 16 ymm registers, too
// few for a whole panel of several rows: there a tile of 2 rows or more walks its panel in sub-panels
// (below), and a lone row keeps the one-row x one-panel tile (8 ymm accumulators). The tile shape never
// changes what an element computes.
#if defined(LSTMLM_SIMD_AVX512)
constexpr int kTileRows = 6;
constexpr int kAccumulators = 24;  // in V16 units (of 32 zmm: 24 accumulators, 4 weights, broadcasts)
#elif defined(LSTMLM_SIMD_AVX2)
constexpr int kTileRows = 6;
constexpr int kAccumulators = 4;
#elif defined(LSTMLM_SIMD_WASM128)
constexpr int kTileRows = 4;
constexpr int kAccumulators = 4;
#else
constexpr int kTileRows = 1;
constexpr int kAccumulators = 4;
#endif

// Lines a full row tile brings into L2 while it runs, one per k: its share of the next panel
// (next_panel).
struct Prefetch {
  const char* from = nullptr;
  int lines = 0;
};

// NP panels of W vectors each (full panels: W = 4, the k-rows 64 floats apart; the tail panel: NP = 1,
// W = its width in vectors, the k-rows 16 W floats apart).
template <int R, int NP, int W = kPanelVectors>
inline void accumulate(V16 (&acc)[R][NP * W], const float* const* a, const float* panel, size_t panel_stride,
                       int K, Prefetch pf = {}) {
  for (int k = 0; k < K; ++k) {
    if (R == kTileRows && k < pf.lines)
      __builtin_prefetch(pf.from + 64 * static_cast<size_t>(k), 0, 2);  // prefetcht1
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

#if defined(LSTMLM_SIMD_AVX2)
// AVX2 sub-panel tiles, after BLIS's Haswell sgemm micro-kernel: R rows x C ymm (8 columns each) of one
// panel, each weight load reused by R rows (a one-row panel tile re-streams the panel from L2 for every
// row and feeds one fma per load). C by rows, so that 8 to 12 fma chains hide the fma latency and the
// accumulators, C weights and one broadcast fit the 16 registers: 6 x 16 (12 accumulators) down to 4 x 16,
// 3 x 32 and 2 x 32. The same vfmadd231ps per element as the V16 tiles (V16 is two ymm there), so an
// element's chain is unchanged.
constexpr int kSubRowsMin = 2;
template <int R>
constexpr int kSubVectors = R >= 4 ? 2 : 4;

// The first tile over a panel brings it in from L3 or memory. A sub-panel walks it 256 bytes apart, a
// stride the hardware prefetchers follow poorly (measured: a 64-row GEMM over 10 MB of weights no faster
// than the one-row tiles), so that tile prefetches whole k-rows this far ahead (+35% there).
constexpr int kPrefetchRows = 40;

// out[r][ocol + j] = init[r][icol + j] + sum_k a[r][k] * w[k stride + j], j < 8 C; with Prefetch, also
// the `lines` cache lines of the k-row kPrefetchRows ahead.
template <int R, int C, bool Prefetch = false>
[[gnu::always_inline]] inline void sub_tile(const float* const* a, const float* const* init, int icol,
                                            float* const* out, int ocol, const float* w, size_t stride, int K,
                                            int lines = 0) {
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < C; ++q) acc[r][q] = _mm256_loadu_ps(init[r] + icol + 8 * q);
  for (int k = 0; k < K; ++k) {
    const float* wk = w + static_cast<size_t>(k) * stride;
    if constexpr (Prefetch)
      for (int l = 0; l < lines; ++l)
        _mm_prefetch(reinterpret_cast<const char*>(wk + kPrefetchRows * stride + kLanes * l), _MM_HINT_T0);
    __m256 wv[C];
    for (int q = 0; q < C; ++q) {
      wv[q] = _mm256_loadu_ps(wk + 8 * q);
      __asm__("" : "+x"(wv[q]));  // as pin(): one load per weight, not one per fma
    }
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(a[r] + k);
      for (int q = 0; q < C; ++q) acc[r][q] = _mm256_fmadd_ps(x, wv[q], acc[r][q]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < C; ++q) _mm256_storeu_ps(out[r] + ocol + 8 * q, acc[r][q]);
}

// The sub-panels of a panel `vectors` ymm wide (k-rows that many ymm apart) for R rows: C-wide ones, then
// a 2-wide one for a tail panel of an odd number of V16 vectors. `first`: the first tile over the panel.
template <int R>
void sub_tiles(const float* const* a, const float* const* init, int icol, float* const* out, int ocol,
               const float* w, int vectors, int K, bool first) {
  constexpr int C = kSubVectors<R>;
  const size_t stride = static_cast<size_t>(vectors) * 8;
  int v = 0;
  if (first && C <= vectors) {
    sub_tile<R, C, true>(a, init, icol, out, ocol, w, stride, K, vectors / 2);
    v = C;
  }
  for (; v + C <= vectors; v += C)
    sub_tile<R, C>(a, init, icol + 8 * v, out, ocol + 8 * v, w + 8 * v, stride, K);
  if constexpr (C > 2)
    if (v < vectors) sub_tile<R, 2>(a, init, icol + 8 * v, out, ocol + 8 * v, w + 8 * v, stride, K);
}
#endif

#if defined(LSTMLM_SIMD_WASM128)
// WebAssembly SIMD128 sub-panel tiles, as AVX2's: R rows x C v128 (4 columns each) of one panel, each weight
// load reused by R rows. A V16 tile of a whole panel (16 v128 accumulators per row) does not fit the 16 xmm
// registers an x86-64 engine maps v128 to: C by rows so that the accumulators, C weights and a broadcast
// do (4 x 2, 2 x 4, 1 x 8). The same multiply then add per element as the V16 code, so an element's chain
// is unchanged.
constexpr int kSubRowsMin = 1;
template <int R>
constexpr int kSubVectors = R >= 3   ? 2
                            : R == 2 ? 4
                                     : 8;

template <int R, int C>
[[gnu::always_inline]] inline void sub_tile(const float* const* a, const float* const* init, int icol,
                                            float* const* out, int ocol, const float* w, size_t stride,
                                            int K) {
  v128_t acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < C; ++q) acc[r][q] = wasm_v128_load(init[r] + icol + 4 * q);
  for (int k = 0; k < K; ++k) {
    const float* wk = w + static_cast<size_t>(k) * stride;
    v128_t wv[C];
    for (int q = 0; q < C; ++q) wv[q] = wasm_v128_load(wk + 4 * q);
    for (int r = 0; r < R; ++r) {
      const v128_t x = wasm_v128_load32_splat(a[r] + k);
      for (int q = 0; q < C; ++q) acc[r][q] = wasm_f32x4_add(wasm_f32x4_mul(x, wv[q]), acc[r][q]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < C; ++q) wasm_v128_store(out[r] + ocol + 4 * q, acc[r][q]);
}

// A lone row's tile (batch 1): C accumulators, each weight used once. The same multiply then add per
// element as sub_tile. Out of line with plain pointers: V8 (TurboFan) then emits each weight's load, multiply
// and add in turn, in C + 2 registers; inlined into sub_tiles with the rows' pointer arrays it hoisted the C
// loads above the arithmetic and spilled an accumulator to the stack on every k (17 live v128 in the 15 it
// allocates), 1.2x slower.
template <int C>
[[gnu::noinline]] void row_tile(const float* a, const float* init, float* out, const float* w, size_t stride,
                                int K) {
  v128_t acc[C];
  for (int q = 0; q < C; ++q) acc[q] = wasm_v128_load(init + 4 * q);
  for (int k = 0; k < K; ++k, w += stride) {
    const v128_t x = wasm_v128_load32_splat(a + k);
    for (int q = 0; q < C; ++q) acc[q] = wasm_f32x4_add(wasm_f32x4_mul(x, wasm_v128_load(w + 4 * q)), acc[q]);
  }
  for (int q = 0; q < C; ++q) wasm_v128_store(out + 4 * q, acc[q]);
}

// The sub-panels of a panel `vectors` x 8 floats wide (AVX2's unit, so that the callers are shared; k-rows
// that many apart): C-wide ones, then a 4-wide one for a tail panel of an odd number of V16 vectors.
template <int R>
void sub_tiles(const float* const* a, const float* const* init, int icol, float* const* out, int ocol,
               const float* w, int vectors, int K, bool /*first*/) {
  constexpr int C = kSubVectors<R>;
  const int n = 2 * vectors;  // in v128
  const size_t stride = static_cast<size_t>(n) * 4;
  auto tile = [&]<int Q>(int v) {
    if constexpr (R == 1)
      row_tile<Q>(a[0], init[0] + icol + 4 * v, out[0] + ocol + 4 * v, w + 4 * v, stride, K);
    else
      sub_tile<R, Q>(a, init, icol + 4 * v, out, ocol + 4 * v, w + 4 * v, stride, K);
  };
  int v = 0;
  for (; v + C <= n; v += C) tile.template operator()<C>(v);
  if constexpr (C > 4)
    if (v < n) tile.template operator()<4>(v);
}
#endif

#if defined(LSTMLM_SIMD_AVX2) || defined(LSTMLM_SIMD_WASM128)
#define LSTMLM_FP32_SUB_TILES 1  // gemm_tile, gemm_tail and the LSTM step run sub_tiles from kSubRowsMin rows
#endif

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

// The first row tile over a panel reads it from L3 or memory, faster than they deliver it: the other full
// row tiles over panel p (of a GEMM or step of `rows` rows over the panels of `pr`) bring the next panel
// of the range into L2 meanwhile, each its share, so that the next first tile finds it there. Panels of
// fewer inputs than kPrefetchDepth (a quarter of L1 or less) are left to the hardware.
constexpr int kPrefetchDepth = 192;
inline Prefetch next_panel(const PackedMat& w, int p, int r, int rows, const PanelRange& pr) {
  const int tiles = rows / kTileRows, i = r / kTileRows;
  const bool next = p + 1 < pr.last || (pr.has_tail && p + 1 == w.full);
  if (w.K < kPrefetchDepth || !next || i == 0 || i >= tiles) return {};  // i >= tiles: the remainder
  const size_t bytes = static_cast<size_t>(w.K) * (p + 1 < w.full ? kPanel : kLanes * w.tail) * sizeof(float);
  const size_t lines = (bytes + 63) / 64, from = lines * size_t(i - 1) / size_t(tiles - 1),
               to = lines * size_t(i) / size_t(tiles - 1);
  return {reinterpret_cast<const char*>(w.panel(p + 1)) + 64 * from, static_cast<int>(to - from)};
}

template <int R, int NP>
void gemm_tile(const float* const* a, const float* const* init, float* const* out, const PackedMat& w, int p,
               [[maybe_unused]] bool first, Prefetch pf = {}) {
#if defined(LSTMLM_FP32_SUB_TILES)
  if constexpr (R >= kSubRowsMin) {
    for (int i = 0; i < NP; ++i)
      sub_tiles<R>(a, init, (p + i) * kPanel, out, (p + i) * kPanel, w.panel(p + i), 2 * kPanelVectors, w.K,
                   first);
    return;
  }
#endif
  V16 acc[R][NP * kPanelVectors];
  const int col = p * kPanel;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NP * kPanelVectors; ++q) acc[r][q] = load(init[r] + col + kLanes * q);
  accumulate<R, NP>(acc, a, w.panel(p), static_cast<size_t>(w.K) * kPanel, w.K, pf);
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NP * kPanelVectors; ++q) store(out[r] + col + kLanes * q, acc[r][q]);
}

// The tail panel: R rows x Q vectors at column kPanel * full.
template <int R, int Q>
void gemm_tail(const float* const* a, const float* const* init, float* const* out, const PackedMat& w,
               [[maybe_unused]] bool first) {
#if defined(LSTMLM_FP32_SUB_TILES)
  if constexpr (R >= kSubRowsMin) {
    sub_tiles<R>(a, init, w.full * kPanel, out, w.full * kPanel, w.panel(w.full), 2 * Q, w.K, first);
    return;
  }
#endif
  V16 acc[R][Q];
  const int col = w.full * kPanel;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < Q; ++q) acc[r][q] = load(init[r] + col + kLanes * q);
  accumulate<R, 1, Q>(acc, a, w.panel(w.full), 0, w.K);
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < Q; ++q) store(out[r] + col + kLanes * q, acc[r][q]);
}

// One row's last tile with the tail panel in the same k loop: alone, the tail's Q fma chains (one per
// vector) wait on the fma latency at every k; beside the tile's chains they overlap (a decoder or an LSTM
// step at batch 1). acc: panels p..p+NP-1 then the tail's Q vectors, from init; each element's chain is
// the one accumulate runs, so the bits are the same.
template <int NP, int Q>
[[gnu::always_inline]] inline void accumulate_with_tail(V16 (&acc)[NP * kPanelVectors + Q], const float* a,
                                                        const float* init, const PackedMat& w, int p) {
  constexpr int N = NP * kPanelVectors;
  const int col = p * kPanel, tcol = w.full * kPanel;
  for (int q = 0; q < N; ++q) acc[q] = load(init + col + kLanes * q);
  for (int q = 0; q < Q; ++q) acc[N + q] = load(init + tcol + kLanes * q);
  const float* panel = w.panel(p);
  const float* tail = w.panel(w.full);
  const size_t stride = static_cast<size_t>(w.K) * kPanel;
  for (int k = 0; k < w.K; ++k) {
    const V16 x = set1(a[k]);
    for (int i = 0; i < NP; ++i) {
      const float* wk = panel + i * stride + static_cast<size_t>(k) * kPanel;
      for (int q = 0; q < kPanelVectors; ++q)
        acc[i * kPanelVectors + q] = fma(x, load(wk + kLanes * q), acc[i * kPanelVectors + q]);
    }
    const float* tk = tail + static_cast<size_t>(k) * (kLanes * Q);
    for (int q = 0; q < Q; ++q) acc[N + q] = fma(x, load(tk + kLanes * q), acc[N + q]);
  }
}

template <int NP, int Q>
[[gnu::noinline]] void gemm_tile_tail(const float* a, const float* init, float* out, const PackedMat& w,
                                      int p) {
  constexpr int N = NP * kPanelVectors;
  V16 acc[N + Q];
  accumulate_with_tail<NP, Q>(acc, a, init, w, p);
  for (int q = 0; q < N; ++q) store(out + p * kPanel + kLanes * q, acc[q]);
  for (int q = 0; q < Q; ++q) store(out + w.full * kPanel + kLanes * q, acc[N + q]);
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

// Runs Tile<R, NP>(row offset, panel) over rows x panels [first, panels). With a full row tile, panel by
// panel: the full row tiles, then the remaining rows in one tile, while the panel is in cache (after all
// panels, the remainder re-streamed every weight from L3 or memory for a few rows: 6% of MEDIUM score b64
// in perf). With fewer rows than a full tile, the widest tiles that fit the accumulators.
template <class Run>
void tiles(int rows, int first, int panels, Run&& run) {
  const int full = rows / kTileRows * kTileRows;
  const int rem = rows - full;
  if (full > 0) {
    for (int p = first; p < panels; ++p) {
      for (int r = 0; r < full; r += kTileRows) run.template operator()<kTileRows, 1>(r, p);
      for_remainder(rem, [&]<int R>() { run.template operator()<R, 1>(full, p); });
    }
    return;
  }
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

// out[r][j] = init[r][j] + sum_{k<K} a[r][k] * W[k][j] for every column of part `part` of `parts` of w
// (panel_range), r < rows. init[r] may point to a shared row (a bias). out[r] must have room for w.Np
// columns.
inline void gemm_rows(int rows, const float* const* a, const float* const* init, float* const* out,
                      const PackedMat& w, int part = 0, int parts = 1) {
  const PanelRange pr = panel_range(w, part, parts);
  bool tail_done = false;
  tiles(rows, pr.first, pr.last, [&]<int R, int NP>(int r, int p) {
#if !defined(LSTMLM_SIMD_WASM128)
    if constexpr (R == 1)
      if (rows == 1 && pr.has_tail && p + NP == pr.last) {  // a lone row's last tile takes the tail along
        tail_done = true;
        switch (w.tail) {
          case 1:
            return gemm_tile_tail<NP, 1>(a[0], init[0], out[0], w, p);
          case 2:
            return gemm_tile_tail<NP, 2>(a[0], init[0], out[0], w, p);
          case 3:
            return gemm_tile_tail<NP, 3>(a[0], init[0], out[0], w, p);
          default:
            return gemm_tile_tail<NP, 4>(a[0], init[0], out[0], w, p);
        }
      }
#endif
    gemm_tile<R, NP>(a + r, init + r, out + r, w, p, r == 0, next_panel(w, p, r, rows, pr));
  });
  if (pr.has_tail && !tail_done)
    tail_tiles(rows, w.tail,
               [&]<int R, int Q>(int r) { gemm_tail<R, Q>(a + r, init + r, out + r, w, r == 0); });
}

}  // namespace

}  // namespace lstmlm::kernels::fp32
