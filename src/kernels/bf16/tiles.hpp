// The bf16 register tiles, written once over an ISA's operations and included by each ISA's file
// (internal linkage: every file gets its own copy, compiled with its own flags). A tile is R rows x NB
// blocks of 16 columns; each weight vector is loaded once per tile and used by its R rows.
#pragma once
#include "kernels/bf16/bf16.hpp"

namespace lstmlm::kernels::bf16 {

namespace {

// Ops: V (the accumulator of 16 columns), init (from init or zero), weights (one pair of inputs of a block),
// pair (one pair of a row's inputs), step (a pair into an accumulator), store.
template <class Ops, int R, int NB>
[[gnu::always_inline]] inline void tile(const Args& a, int r0, int j) {
  typename Ops::V acc[R][NB];
  for (int r = 0; r < R; ++r)
    for (int b = 0; b < NB; ++b) acc[r][b] = Ops::init(a.init ? a.init[r0 + r] + 16 * (j + b) : nullptr);
  const uint16_t* w[NB];
  for (int b = 0; b < NB; ++b) w[b] = a.block(j + b);
  const uint32_t* x[R];
  for (int r = 0; r < R; ++r)
    x[r] = reinterpret_cast<const uint32_t*>(a.x + static_cast<size_t>(r0 + r) * static_cast<size_t>(a.kp));
  for (int p = 0; p < a.kp / 2; ++p) {
    typename Ops::W wv[NB];
    for (int b = 0; b < NB; ++b) wv[b] = Ops::weights(w[b] + static_cast<size_t>(p) * 32);
    for (int r = 0; r < R; ++r) {
      const typename Ops::X xv = Ops::pair(x[r][p]);
      for (int b = 0; b < NB; ++b) acc[r][b] = Ops::step(acc[r][b], xv, wv[b]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int b = 0; b < NB; ++b) Ops::store(a.out[r0 + r] + 16 * (j + b), acc[r][b]);
}

template <class Ops, int R>
[[gnu::always_inline]] inline void row_tiles(const Args& a, int r0) {
  for (int q = 0; q < a.n; ++q) {
    int j = a.cols[q].begin / 16;
    const int end = a.cols[q].end / 16;
    // A lone row has only its blocks' accumulators as independent chains: twice as many blocks per tile.
    constexpr int NB = R == 1 ? 2 * Ops::kNB : Ops::kNB;
    for (; j + NB <= end; j += NB) tile<Ops, R, NB>(a, r0, j);
    for (; j + Ops::kNB <= end; j += Ops::kNB) tile<Ops, R, Ops::kNB>(a, r0, j);
    for (; j < end; ++j) tile<Ops, R, 1>(a, r0, j);
  }
}

template <class Ops>
[[gnu::always_inline]] inline void run(const Args& a) {
  int r = 0;
  for (; r + Ops::kR <= a.rows; r += Ops::kR) row_tiles<Ops, Ops::kR>(a, r);
  for (; r < a.rows; ++r) row_tiles<Ops, 1>(a, r);
}

}  // namespace

}  // namespace lstmlm::kernels::bf16
