// The AMX GEMM shared by the bf16 and int8 kernels (compiled with -mamx-tile). Every tile here is 16 rows
// of 64 bytes: C tiles of 16 x 16 fp32 or int32, A tiles of 16 rows of inputs, B tiles of 16 input groups
// (pairs or quads) x 16 columns.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace lstmlm::kernels {

namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3 accumulate, 4-5 hold inputs, 6-7 weights; all 16 x 64 bytes. The configuration is the
// thread's; the kernel releases it when done, so a thread that runs no AMX carries no tile state.
struct TileSession {
  TileSession() {
    TileConfig c;
    for (int t = 0; t < 8; ++t) {
      c.rows[t] = 16;
      c.colsb[t] = 64;
    }
    _tile_loadconfig(&c);
  }
  ~TileSession() { _tile_release(); }
  TileSession(const TileSession&) = delete;
  TileSession& operator=(const TileSession&) = delete;
};

inline constexpr int kPrefetchAhead = 4;  // weight tiles

// 2 row blocks x 2 column blocks per pass (tiles 0-3 accumulate, 4-5 hold inputs, 6-7 weights): each A
// and B tile serves two products, and the four products of a chunk are independent. The weight tiles
// come from L3 or memory and serve two row blocks per load: they are prefetched a few chunks ahead
// (perf put ~40% of a pass on loading B without it). Measured against 4 row blocks x 1 column block
// (each weight tile loaded once per 64 rows, but each input tile reloaded while the product before last
// still reads it): MEDIUM score b64 t2 ~5% faster in bf16, the same in int8 (Sapphire Rapids). T (the
// precision) gives Args, the input row stride in bytes, the weight tiles of block j, the product
// dp<C, A, B>() and store(args, tile, row0, col).
template <class T, int MB, int NB>
void amx_pass(const typename T::Args& a, int m, int j) {
  const size_t xs = T::x_stride(a);
  const unsigned char* x0 = T::x_bytes(a) + static_cast<size_t>(m) * 16 * xs;
  const unsigned char* x1 = x0 + 16 * xs;
  const unsigned char* w0 = T::w_bytes(a, j);
  const unsigned char* w1 = T::w_bytes(a, j + 1);
  _tile_zero(0);
  if constexpr (NB == 2) _tile_zero(1);
  if constexpr (MB == 2) _tile_zero(2);
  if constexpr (MB == 2 && NB == 2) _tile_zero(3);
  const int chunks = a.kp / T::kTileDepth;
  for (int k = 0; k < chunks; ++k) {
    const size_t xo = static_cast<size_t>(k) * 64, wo = static_cast<size_t>(k) * 1024;
    for (int line = 0; line < 16; ++line) {
      _mm_prefetch(reinterpret_cast<const char*>(w0 + wo + kPrefetchAhead * 1024 + line * 64), _MM_HINT_T0);
      if constexpr (NB == 2)
        _mm_prefetch(reinterpret_cast<const char*>(w1 + wo + kPrefetchAhead * 1024 + line * 64), _MM_HINT_T0);
    }
    _tile_loadd(4, x0 + xo, xs);
    _tile_loadd(6, w0 + wo, 64);
    if constexpr (NB == 2) _tile_loadd(7, w1 + wo, 64);
    if constexpr (MB == 2) _tile_loadd(5, x1 + xo, xs);
    T::template dp<0, 4, 6>();
    if constexpr (NB == 2) T::template dp<1, 4, 7>();
    if constexpr (MB == 2) T::template dp<2, 5, 6>();
    if constexpr (MB == 2 && NB == 2) T::template dp<3, 5, 7>();
  }
  typename T::Acc c[16][16];
  _tile_stored(0, c, 64);
  T::store(a, c, m * 16, j * 16);
  if constexpr (NB == 2) {
    _tile_stored(1, c, 64);
    T::store(a, c, m * 16, (j + 1) * 16);
  }
  if constexpr (MB == 2) {
    _tile_stored(2, c, 64);
    T::store(a, c, (m + 1) * 16, j * 16);
  }
  if constexpr (MB == 2 && NB == 2) {
    _tile_stored(3, c, 64);
    T::store(a, c, (m + 1) * 16, (j + 1) * 16);
  }
}

template <class T>
void amx_gemm(const typename T::Args& a) {
  const TileSession tiles;
  const int row_blocks = (a.rows + 15) / 16;
  for (int q = 0; q < a.n; ++q) {
    const int end = a.cols[q].end / 16;
    for (int j = a.cols[q].begin / 16; j < end; j += 2) {
      const bool two_cols = j + 1 < end;
      for (int m = 0; m < row_blocks; m += 2) {
        const bool two_rows = m + 1 < row_blocks;
        if (two_rows && two_cols)
          amx_pass<T, 2, 2>(a, m, j);
        else if (two_rows)
          amx_pass<T, 2, 1>(a, m, j);
        else if (two_cols)
          amx_pass<T, 1, 2>(a, m, j);
        else
          amx_pass<T, 1, 1>(a, m, j);
      }
    }
  }
}

}  // namespace

}  // namespace lstmlm::kernels
