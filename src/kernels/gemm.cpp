#include <algorithm>

#include "kernels/kernels.hpp"
#include "kernels/simd.hpp"

namespace lstmlm::detail {

using namespace simd;

namespace {

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
template <int R, int NP, int W = 4>
inline void accumulate(V16 (&acc)[R][NP * W], const float* const* a, const float* panel, size_t panel_stride,
                       int K) {
  for (int k = 0; k < K; ++k) {
    V16 w[NP * W];
    for (int p = 0; p < NP; ++p) {
      const float* wk = panel + p * panel_stride + static_cast<size_t>(k) * (16 * W);
      for (int q = 0; q < W; ++q) {
        w[p * W + q] = load(wk + 16 * q);
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
  V16 acc[R][NP * 4];
  const int col = p * kPanel;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NP * 4; ++q) acc[r][q] = load(init[r] + col + 16 * q);
  accumulate<R, NP>(acc, a, w.panel(p), static_cast<size_t>(w.K) * kPanel, w.K);
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NP * 4; ++q) store(out[r] + col + 16 * q, acc[r][q]);
}

// The tail panel: R rows x Q vectors at column 64 * full.
template <int R, int Q>
void gemm_tail(const float* const* a, const float* const* init, float* const* out, const PackedMat& w) {
  V16 acc[R][Q];
  const int col = w.full * kPanel;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < Q; ++q) acc[r][q] = load(init[r] + col + 16 * q);
  accumulate<R, 1, Q>(acc, a, w.panel(w.full), 0, w.K);
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < Q; ++q) store(out[r] + col + 16 * q, acc[r][q]);
}

inline V16 recurrent(RecurrentActivation act, V16 x) {
  switch (act) {
    case RecurrentActivation::HardSigmoid:
      return hard_sigmoid(x);
    case RecurrentActivation::HardSigmoidKeras3:
      return hard_sigmoid_keras3(x);
    default:
      return sigmoid(x);
  }
}

// The cell update shared by full blocks and the tail, lane-wise on gate pre-activations: c = f c + i g
// (clipped), returns h = o tanh(c).
[[gnu::always_inline]] inline V16 cell(const PackedLayer& L, V16 zi, V16 zf, V16 zg, V16 zo, V16 c_prev,
                                       V16& c_out) {
  V16 i = recurrent(L.act, zi), f = recurrent(L.act, zf), g = simd::tanh(zg), o = recurrent(L.act, zo);
  c_out = fma(f, c_prev, i * g);
  if (L.clip) c_out = min(max(c_out, set1(-*L.clip)), set1(*L.clip));
  return o * simd::tanh(c_out);
}

template <int R, int NP>
void lstm_tile(const float* const* h, const float* const* init, float* const* c, float* const* m,
               const PackedLayer& L, int u) {
  V16 acc[R][NP * 4];
  const int col = u * kPanel;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NP * 4; ++q) acc[r][q] = load(init[r] + col + 16 * q);
  accumulate<R, NP>(acc, h, L.w_hh.panel(u), static_cast<size_t>(L.w_hh.K) * kPanel, L.w_hh.K);
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < NP; ++p) {
      const int unit = (u + p) * kUnitBlock;
      V16 cn;
      V16 h = cell(L, acc[r][4 * p], acc[r][4 * p + 1], acc[r][4 * p + 2], acc[r][4 * p + 3],
                   load(c[r] + unit), cn);
      store(c[r] + unit, cn);
      store(m[r] + unit, h);
    }
}

// The tail panel's t units (t < 16): the gates lie at [i f g o] x t, so they go through memory to line
// each gate up with the units' lanes; lanes past t are neither read from c nor written.
template <int R, int Q>
void lstm_tail(const float* const* h, const float* const* init, float* const* c, float* const* m,
               const PackedLayer& L) {
  V16 acc[R][Q];
  const int blocks = L.w_hh.full, col = blocks * kPanel, unit = blocks * kUnitBlock, t = L.H - unit;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < Q; ++q) acc[r][q] = load(init[r] + col + 16 * q);
  accumulate<R, 1, Q>(acc, h, L.w_hh.panel(blocks), 0, L.w_hh.K);
  alignas(64) float buf[16 * Q];
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < Q; ++q) store(buf + 16 * q, acc[r][q]);
    V16 cn;
    V16 hn = cell(L, load_n(buf, t, 0.0f), load_n(buf + t, t, 0.0f), load_n(buf + 2 * t, t, 0.0f),
                  load_n(buf + 3 * t, t, 0.0f), load_n(c[r] + unit, t, 0.0f), cn);
    store_n(c[r] + unit, cn, t);
    store_n(m[r] + unit, hn, t);
  }
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

// Runs Tile<R, NP>(row offset, panel) over rows x panels [p0, p1): full row tiles with panels outside
// (a panel stays in cache across the row tiles), then the remaining rows with wider tiles.
template <class Run>
void tiles(int rows, int p0, int p1, Run&& run) {
  const int full = rows / kTileRows * kTileRows;
  for (int p = p0; p < p1; ++p)
    for (int r = 0; r < full; r += kTileRows) run.template operator()<kTileRows, 1>(r, p);
  const int rem = rows - full;
  // Widest tile that fits the accumulators first, then narrower ones for the panels left over
  // (7 panels at batch 1: 4 + 3, not 4 + 1 + 1 + 1, whose lone chains would wait on fma latency).
  auto narrow = [&]<int R>() {
    constexpr int NP = std::clamp(kAccumulators / (4 * R), 1, 4);
    int p = p0;
    for (; p + NP <= p1; p += NP) run.template operator()<R, NP>(full, p);
    if constexpr (NP >= 4)
      if (p + 3 <= p1) {
        run.template operator()<R, 3>(full, p);
        p += 3;
      }
    if constexpr (NP >= 3)
      if (p + 2 <= p1) {
        run.template operator()<R, 2>(full, p);
        p += 2;
      }
    for (; p < p1; ++p) run.template operator()<R, 1>(full, p);
  };
  for_remainder(rem, narrow);
}

}  // namespace

void gemm_rows(int rows, const float* const* a, const float* const* init, float* const* out,
               const PackedMat& w, int p0, int p1) {
  tiles(rows, p0, p1, [&]<int R, int NP>(int r, int p) { gemm_tile<R, NP>(a + r, init + r, out + r, w, p); });
  if (w.tail > 0 && p1 == w.full)
    tail_tiles(rows, w.tail, [&]<int R, int Q>(int r) { gemm_tail<R, Q>(a + r, init + r, out + r, w); });
}

void lstm_rows(int rows, const float* const* h_prev, const float* const* init, float* const* c,
               float* const* m, const PackedLayer& layer, int u0, int u1) {
  tiles(rows, u0, u1,
        [&]<int R, int NP>(int r, int u) { lstm_tile<R, NP>(h_prev + r, init + r, c + r, m + r, layer, u); });
  if (layer.w_hh.tail > 0 && u1 == layer.w_hh.full)
    tail_tiles(rows, layer.w_hh.tail,
               [&]<int R, int Q>(int r) { lstm_tail<R, Q>(h_prev + r, init + r, c + r, m + r, layer); });
}

float log_sum_exp(const float* x, int n) {
  int full = n / kLanes * kLanes;
  V16 mx = set1(-INFINITY);
  for (int j = 0; j < full; j += kLanes) mx = max(mx, load(x + j));
  if (full < n) mx = max(mx, load_n(x + full, n - full, -INFINITY));
  float m = reduce_max(mx);
  if (!std::isfinite(m)) return m;  // all -inf (or a +inf/NaN logit): nothing to normalise
  V16 vm = set1(m), s = set1(0.0f);
  for (int j = 0; j < full; j += kLanes) s = s + simd::exp(load(x + j) - vm);
  if (full < n) {
    // Tail lanes past n are loaded as m (exp(0) = 1) and multiplied by 0, so they add exactly 0.
    static const float kOnes[kLanes] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    s = s + simd::exp(load_n(x + full, n - full, m) - vm) * load_n(kOnes, n - full, 0.0f);
  }
  return m + std::log(reduce_add(s));
}

void subtract(const float* x, float lse, float* out, int n) {
  for (int j = 0; j < n; ++j) out[j] = x[j] - lse;
}

}  // namespace lstmlm::detail
