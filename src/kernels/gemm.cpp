#include "kernels/kernels.hpp"
#include "kernels/simd.hpp"

namespace lstmlm::detail {

using namespace simd;

namespace {

// Rows per register tile: 4 rows x 64 columns = 16 zmm accumulators on AVX-512; AVX2 has only 16 ymm
// registers, so one row (8 ymm accumulators) per tile there.
#if defined(LSTMLM_SIMD_AVX512)
constexpr int kTileRows = 4;
#else
constexpr int kTileRows = 1;
#endif

template <int R>
inline void accumulate(V16 (&acc)[R][4], const float* const* a, const float* panel, int K) {
  for (int k = 0; k < K; ++k) {
    const float* wk = panel + static_cast<size_t>(k) * kPanel;
    V16 w0 = load(wk), w1 = load(wk + 16), w2 = load(wk + 32), w3 = load(wk + 48);
    for (int r = 0; r < R; ++r) {
      V16 x = set1(a[r][k]);
      acc[r][0] = fma(x, w0, acc[r][0]);
      acc[r][1] = fma(x, w1, acc[r][1]);
      acc[r][2] = fma(x, w2, acc[r][2]);
      acc[r][3] = fma(x, w3, acc[r][3]);
    }
  }
}

template <int R>
void gemm_tile(const float* const* a, const float* const* init, float* const* out, const float* panel, int K,
               int col) {
  V16 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < 4; ++q) acc[r][q] = load(init[r] + col + 16 * q);
  accumulate<R>(acc, a, panel, K);
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < 4; ++q) store(out[r] + col + 16 * q, acc[r][q]);
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

template <int R>
void lstm_tile(const float* const* h, const float* const* init, float* const* c, float* const* m,
               const PackedLayer& L, int u) {
  V16 acc[R][4];
  int col = u * kPanel;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < 4; ++q) acc[r][q] = load(init[r] + col + 16 * q);
  accumulate<R>(acc, h, L.w_hh.panel(u), L.w_hh.K);
  int unit = u * kUnitBlock;
  for (int r = 0; r < R; ++r) {
    V16 i = recurrent(L.act, acc[r][0]);
    V16 f = recurrent(L.act, acc[r][1]);
    V16 g = simd::tanh(acc[r][2]);
    V16 o = recurrent(L.act, acc[r][3]);
    V16 cn = fma(f, load(c[r] + unit), i * g);
    if (L.clip) cn = min(max(cn, set1(-*L.clip)), set1(*L.clip));
    store(c[r] + unit, cn);
    store(m[r] + unit, o * simd::tanh(cn));
  }
}

}  // namespace

void gemm_rows(int rows, const float* const* a, const float* const* init, float* const* out,
               const PackedMat& w, int p0, int p1) {
  // Panels outside, row tiles inside: a panel stays in cache across all row tiles.
  for (int p = p0; p < p1; ++p) {
    const float* panel = w.panel(p);
    int r = 0;
    for (; r + kTileRows <= rows; r += kTileRows)
      gemm_tile<kTileRows>(a + r, init + r, out + r, panel, w.K, p * kPanel);
    for (; r < rows; ++r) gemm_tile<1>(a + r, init + r, out + r, panel, w.K, p * kPanel);
  }
}

void lstm_rows(int rows, const float* const* h_prev, const float* const* init, float* const* c,
               float* const* m, const PackedLayer& layer, int u0, int u1) {
  for (int u = u0; u < u1; ++u) {
    int r = 0;
    for (; r + kTileRows <= rows; r += kTileRows)
      lstm_tile<kTileRows>(h_prev + r, init + r, c + r, m + r, layer, u);
    for (; r < rows; ++r) lstm_tile<1>(h_prev + r, init + r, c + r, m + r, layer, u);
  }
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
