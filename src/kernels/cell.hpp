// The LSTM cell update on gate pre-activations, lane-wise, shared by every backend: the precisions differ
// in how they compute the gates, never in the cell. Internal linkage, like tiles.hpp: each file that
// includes it gets the code compiled for its own ISA.
#pragma once
#include <optional>

#include "kernels/backend.hpp"
#include "kernels/simd.hpp"
#include "lstmlm/config.hpp"

namespace lstmlm::kernels {

// A layer's cell, as every kernel variant receives it (plain data: the same type in every copy).
struct CellParams {
  int H = 0;
  RecurrentActivation act = RecurrentActivation::Sigmoid;
  std::optional<float> clip;
  Activation cell_act = Activation::Tanh;  // of g and of c in h = o act(c) (Keras' `activation`)
  // Peepholes, [H] each, by unit (null: none; the fp32 kernels take them, cell_peep below): i and f see
  // c_prev, o sees the new c (TF1's use_peepholes).
  const float *ci = nullptr, *cf = nullptr, *co = nullptr;
};

namespace {

using namespace simd;

[[gnu::always_inline]] inline V16 recurrent(RecurrentActivation act, V16 x) {
  switch (act) {
    case RecurrentActivation::HardSigmoid:
      return hard_sigmoid(x);
    case RecurrentActivation::HardSigmoidKeras3:
      return hard_sigmoid_keras3(x);
    default:
      return sigmoid(x);
  }
}

[[gnu::always_inline]] inline V16 activate(Activation act, V16 x) {
  switch (act) {
    case Activation::Relu:
      return max(x, set1(0.0f));
    case Activation::Linear:
      return x;
    case Activation::Sigmoid:
      return sigmoid(x);
    default:
      return simd::tanh(x);
  }
}

// A cell in two halves, so that a kernel can run the gates of many cells before their updates: a cell's
// chain (gates, then act(c)) is some 150 cycles deep, and one cell after another a core's out-of-order
// window holds about two of them, while the gates of different cells are independent.
struct Gates {
  V16 i, f, g, o;
};
[[gnu::always_inline]] inline Gates gates(const CellParams& L, V16 zi, V16 zf, V16 zg, V16 zo) {
  return {recurrent(L.act, zi), recurrent(L.act, zf), activate(L.cell_act, zg), recurrent(L.act, zo)};
}
// c = f c + i g (clipped), returns h = o act(c); act is tanh but in a format v2 model.
[[gnu::always_inline]] inline V16 update(const CellParams& L, const Gates& a, V16 c_prev, V16& c_out) {
  c_out = fma(a.f, c_prev, a.i * a.g);
  if (L.clip) c_out = min(max(c_out, set1(-*L.clip)), set1(*L.clip));
  return a.o * activate(L.cell_act, c_out);
}
[[gnu::always_inline]] inline V16 cell(const CellParams& L, V16 zi, V16 zf, V16 zg, V16 zo, V16 c_prev,
                                       V16& c_out) {
  return update(L, gates(L, zi, zf, zg, zo), c_prev, c_out);
}

// The cell with peepholes, for the `n` lanes of units [unit, unit + n): a peephole weight times c is added
// to i's and f's pre-activation before the gates, and o's after the update.
[[gnu::always_inline]] inline V16 peephole(const float* w, int unit, int n) {
  return n == kLanes ? load(w + unit) : load_n(w + unit, n, 0.0f);
}
inline V16 cell_peep(const CellParams& L, V16 zi, V16 zf, V16 zg, V16 zo, V16 c_prev, int unit, int n,
                     V16& c_out) {
  if (L.ci) zi = fma(peephole(L.ci, unit, n), c_prev, zi);
  if (L.cf) zf = fma(peephole(L.cf, unit, n), c_prev, zf);
  const V16 i = recurrent(L.act, zi), f = recurrent(L.act, zf), g = activate(L.cell_act, zg);
  c_out = fma(f, c_prev, i * g);
  if (L.clip) c_out = min(max(c_out, set1(-*L.clip)), set1(*L.clip));
  if (L.co) zo = fma(peephole(L.co, unit, n), c_out, zo);
  return recurrent(L.act, zo) * activate(L.cell_act, c_out);
}
[[gnu::always_inline]] inline bool has_peepholes(const CellParams& L) { return L.ci || L.cf || L.co; }

// Log-sum-exp of x[0..n), max-subtracted, the sum of exps accumulated lane-wise in a fixed order.
inline LogSumExp log_sum_exp(const float* x, int n) {
  const int full = n / kLanes * kLanes;
  // The max in 4 chains (max is exact, so the order does not matter): one chain waited on max's latency.
  V16 mx[4] = {set1(-INFINITY), set1(-INFINITY), set1(-INFINITY), set1(-INFINITY)};
  int j = 0;
  for (; j + 4 * kLanes <= full; j += 4 * kLanes)
    for (int c = 0; c < 4; ++c) mx[c] = max(mx[c], load(x + j + c * kLanes));
  for (; j < full; j += kLanes) mx[0] = max(mx[0], load(x + j));
  if (full < n) mx[1] = max(mx[1], load_n(x + full, n - full, -INFINITY));
  float m = reduce_max(max(max(mx[0], mx[1]), max(mx[2], mx[3])));
  if (!std::isfinite(m)) return {m, 0.0f};  // all -inf (or a +inf/NaN logit): nothing to normalise
  V16 vm = set1(m), s = set1(0.0f);
  for (j = 0; j < full; j += kLanes) s = s + exp_nonpositive(load(x + j) - vm);
  if (full < n) {
    // Tail lanes past n are loaded as m (exp(0) = 1) and multiplied by 0, so they add exactly 0.
    static const float kOnes[kLanes] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    s = s + exp_nonpositive(load_n(x + full, n - full, m) - vm) * load_n(kOnes, n - full, 0.0f);
  }
  return {m, std::log(reduce_add(s))};
}

}  // namespace

}  // namespace lstmlm::kernels
