// The hot kernels. Every output element is one fma chain in ascending k starting from its init value,
// computed by the same instructions whatever the number of rows, their order, the tile they fall in or
// the panel range a thread was given: results are bit-identical for a row alone or in any batch.
// Rows are passed as pointer arrays so a caller can gather them (table rows, active rows) without copies.
#pragma once
#include "kernels/packed.hpp"

namespace lstmlm::detail {

// out[r][j] = init[r][j] + sum_{k<K} a[r][k] * W[k][j] for the columns of full panels [p0, p1) and, when
// p1 == w.full, the tail panel; r < rows. init[r] may point to a shared row (a bias). out[r] must have
// room for w.Np columns.
void gemm_rows(int rows, const float* const* a, const float* const* init, float* const* out,
               const PackedMat& w, int p0, int p1);

// Fused LSTM step for full unit blocks [u0, u1) of `layer` and, when u1 == layer.w_hh.full, its tail units:
// gates = init[r] + h_prev[r] W_hh^T (gate-blocked), then in registers: c = f c + i g (clipped), m = o
// tanh(c). c[r] is updated in place (width Hp); m[r] receives o tanh(c) (width Hp; h itself when the layer
// has no projection).
void lstm_rows(int rows, const float* const* h_prev, const float* const* init, float* const* c,
               float* const* m, const PackedLayer& layer, int u0, int u1);

// Log-sum-exp of x[0..n), max-subtracted, the sum of exps accumulated in a fixed order.
float log_sum_exp(const float* x, int n);
// out[j] = x[j] - lse for j < n (out may alias x).
void subtract(const float* x, float lse, float* out, int n);

}  // namespace lstmlm::detail
