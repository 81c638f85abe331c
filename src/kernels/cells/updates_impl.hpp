// The body of each variant file of updates.hpp: after the file has named its variant
// (LSTMLM_KERNEL_VARIANT, one of the namespaces updates.hpp declares), this defines that variant's
// updates(), compiled with the file's flags.
#pragma once
#ifndef LSTMLM_KERNEL_VARIANT
#error "a variant file defines LSTMLM_KERNEL_VARIANT before including kernels/cells/updates_impl.hpp"
#endif
#include "kernels/cell.hpp"
#include "kernels/cells/updates.hpp"

namespace lstmlm::kernels::cells::LSTMLM_KERNEL_VARIANT {

namespace {

using namespace simd;

// Runs f(j, n) over [begin, end) in vectors of 16 (n = 16) and a last partial one (n < 16).
template <class F>
[[gnu::always_inline]] inline void lanes(int begin, int end, F f) {
  int j = begin;
  for (; j + kLanes <= end; j += kLanes) f(j, kLanes);
  if (j < end) f(j, end - j);
}

[[gnu::always_inline]] inline V16 at(const float* p, int j, int n) {
  return n == kLanes ? load(p + j) : load_n(p + j, n, 0.0f);
}
[[gnu::always_inline]] inline void put(float* p, int j, int n, V16 v) {
  if (n == kLanes)
    store(p + j, v);
  else
    store_n(p + j, v, n);
}
[[gnu::always_inline]] inline V16 prev(const Rows& a, int r, int j, int n) {
  return a.h_prev ? at(a.h_prev[r], j, n) : set1(0.0f);
}
// h' = (1 - z) n + z h, as PyTorch's GRU writes it. The fma is spelt out: a product and a sum would be
// contracted into one where the ISA has FMA and not where it lacks it, and the levels would differ.
[[gnu::always_inline]] inline V16 blend(V16 z, V16 n, V16 h) { return fma(z, h, (set1(1.0f) - z) * n); }

void gru_after(const Rows& a, RecurrentActivation rec, Activation act) {
  const int H = a.H;
  for (int r = 0; r < a.rows; ++r) {
    const float *t = a.term[r], *g = a.g[r];
    lanes(a.begin, a.end, [&](int j, int n) {
      const V16 rg = recurrent(rec, at(t, j, n) + at(g, j, n));
      const V16 z = recurrent(rec, at(t + H, j, n) + at(g + H, j, n));
      const V16 nn = activate(act, fma(rg, at(g + 2 * H, j, n), at(t + 2 * H, j, n)));
      put(a.out[r], j, n, blend(z, nn, prev(a, r, j, n)));
    });
  }
}

void gru_reset(const Rows& a, RecurrentActivation rec) {
  for (int r = 0; r < a.rows; ++r) {
    const float *t = a.term[r], *g = a.g[r];
    lanes(a.begin, a.end, [&](int j, int n) {
      put(a.out[r], j, n, recurrent(rec, at(t, j, n) + at(g, j, n)) * prev(a, r, j, n));
    });
  }
}

void gru_before(const Rows& a, const float* const* gn, RecurrentActivation rec, Activation act) {
  const int H = a.H;
  for (int r = 0; r < a.rows; ++r) {
    const float *t = a.term[r], *g = a.g[r];
    lanes(a.begin, a.end, [&](int j, int n) {
      const V16 z = recurrent(rec, at(t + H, j, n) + at(g + H, j, n));
      const V16 nn = activate(act, at(t + 2 * H, j, n) + at(gn[r], j, n));
      put(a.out[r], j, n, blend(z, nn, prev(a, r, j, n)));
    });
  }
}

void rnn(const Rows& a, Activation act) {
  for (int r = 0; r < a.rows; ++r)
    lanes(a.begin, a.end,
          [&](int j, int n) { put(a.out[r], j, n, activate(act, at(a.term[r], j, n) + at(a.g[r], j, n))); });
}

void lstm(const Rows& a, float* const* c, const CellParams& cell, const float* ci, const float* cf,
          const float* co) {
  const int H = a.H;
  for (int r = 0; r < a.rows; ++r) {
    const float *t = a.term[r], *g = a.g[r];
    lanes(a.begin, a.end, [&](int j, int n) {
      const V16 cp = at(c[r], j, n);
      V16 zi = at(t, j, n) + at(g, j, n), zf = at(t + H, j, n) + at(g + H, j, n);
      if (ci) zi = fma(at(ci, j, n), cp, zi);
      if (cf) zf = fma(at(cf, j, n), cp, zf);
      const V16 i = recurrent(cell.act, zi), f = recurrent(cell.act, zf);
      const V16 gg = activate(cell.cell_act, at(t + 2 * H, j, n) + at(g + 2 * H, j, n));
      V16 cn = fma(f, cp, i * gg);
      if (cell.clip) cn = min(max(cn, set1(-*cell.clip)), set1(*cell.clip));
      V16 zo = at(t + 3 * H, j, n) + at(g + 3 * H, j, n);
      if (co) zo = fma(at(co, j, n), cn, zo);
      put(c[r], j, n, cn);
      put(a.out[r], j, n, recurrent(cell.act, zo) * activate(cell.cell_act, cn));
    });
  }
}

void clip(int rows, float* const* x, int begin, int end, float c) {
  for (int r = 0; r < rows; ++r)
    lanes(begin, end, [&](int j, int n) { put(x[r], j, n, min(max(at(x[r], j, n), set1(-c)), set1(c))); });
}

}  // namespace

const Updates& updates() {
  static const Updates u{simd::kIsa, &gru_after, &gru_reset, &gru_before, &rnn, &lstm, &clip};
  return u;
}

}  // namespace lstmlm::kernels::cells::LSTMLM_KERNEL_VARIANT
