// The bf16 register tiles, written once over an ISA's operations and included by each ISA's file
// (internal linkage: every file gets its own copy, compiled with its own flags). A tile is R rows x NB
// blocks of 16 columns; each weight vector is loaded once per tile and used by its R rows.
#pragma once
#include "kernels/bf16/bf16.hpp"
#include "kernels/lowp/tiling.hpp"

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

// The tiles as lowp::run_tiles takes them.
template <class Ops>
struct Tiles {
  static constexpr int kR = Ops::kR, kNB = Ops::kNB, kR2 = Ops::kR2, kNB2 = Ops::kNB2, kNB1 = Ops::kNB1;
  template <int R, int NB>
  [[gnu::always_inline]] static void tile(const Args& a, int r0, int j) {
    bf16::tile<Ops, R, NB>(a, r0, j);
  }
};

template <class Ops>
[[gnu::always_inline]] inline void run(const Args& a) {
  lowp::run_tiles<Tiles<Ops>>(a, static_cast<size_t>(a.kp) * 16 * sizeof(uint16_t));
}

}  // namespace

}  // namespace lstmlm::kernels::bf16
