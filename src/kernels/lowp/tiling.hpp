// The order in which the register-tile kernels of the low precisions (bf16/, int8/) visit a GEMM: the column
// ranges cut into chunks of blocks whose weights fit in a core's L2, and every row tile run over one chunk
// before the next. A pass of R rows over all the weights streams them from L3 or memory (a MEDIUM output
// layer is 13 MB in bf16): with a chunk per pass, each weight byte is fetched once per call, not once per
// R rows. Included by each ISA's file (internal linkage, compiled with that file's flags).
//
// Each output value is still one tile's accumulation over all of K in order, so its bits do not depend on
// the chunking, the rows or the range (lowp/gemm.hpp's contract).
#pragma once
#include <algorithm>
#include <cstddef>
#include <numeric>

#include "kernels/lowp/cols.hpp"

namespace lstmlm::kernels::lowp {

namespace {

// Weight bytes per chunk: half of the smallest L2 of the CPUs with AVX-512 (1 MB on Zen 4/5 and Ice Lake
// servers), leaving the rest for the input rows and the outputs.
inline constexpr size_t kChunkBytes = 384 * 1024;

// K: static ints kR, kNB (rows and blocks of 16 columns per tile), kR2, kNB2 (the tile for what is left of
// the rows after the groups of kR, when at least kR2; kR2 = kR for none), kNB1 (blocks per tile of a lone
// row, which has only its blocks as independent accumulators), and
// template <int R, int NB> static void tile(const Args&, int r0, int j) over rows r0.. and blocks j...
// The blocks a tile of NB leaves run in tiles of NB / 2, then one by one.
template <class K, int R, int NB, class Args>
[[gnu::always_inline]] inline void tile_row(const Args& a, int r0, int j, int end) {
  for (; j + NB <= end; j += NB) K::template tile<R, NB>(a, r0, j);
  if constexpr (NB / 2 > 1)
    for (; j + NB / 2 <= end; j += NB / 2) K::template tile<R, NB / 2>(a, r0, j);
  for (; j < end; ++j) K::template tile<R, 1>(a, r0, j);
}

// Every tile of a.rows x a.cols[0..a.n), a block of weights being block_bytes.
template <class K, class Args>
[[gnu::always_inline]] inline void run_tiles(const Args& a, size_t block_bytes) {
  // A whole number of every tile's width: a chunk left by the widest tile would end in narrow edge tiles.
  constexpr int whole = std::lcm(std::lcm(K::kNB, K::kNB2), K::kNB1);
  const int chunk =
      std::max(whole, static_cast<int>(kChunkBytes / std::max<size_t>(block_bytes, 1)) / whole * whole);
  for (int q = 0; q < a.n; ++q) {
    const int end = a.cols[q].end / 16;
    for (int j = a.cols[q].begin / 16; j < end; j += chunk) {
      const int stop = std::min(end, j + chunk);
      int r = 0;
      for (; r + K::kR <= a.rows; r += K::kR) tile_row<K, K::kR, K::kNB>(a, r, j, stop);
      if constexpr (K::kR2 < K::kR)
        for (; r + K::kR2 <= a.rows; r += K::kR2) tile_row<K, K::kR2, K::kNB2>(a, r, j, stop);
      for (; r < a.rows; ++r) tile_row<K, 1, K::kNB1>(a, r, j, stop);
    }
  }
}

}  // namespace

}  // namespace lstmlm::kernels::lowp
