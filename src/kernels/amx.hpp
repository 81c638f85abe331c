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

// C tiles of up to 4 row blocks (64 rows) by one block of 16 columns, so each weight tile is loaded once
// per 64 rows: at MEDIUM's sizes the weights stream from L3 and that load, not the tile products, bounds
// the step. A alternates between tiles 4 and 5, B between 6 and 7 (consecutive loads do not wait for the
// product still reading the previous one). T (the precision) gives Args, the input row stride in bytes,
// the weight tiles of block j, the product dp<C, A, B>() and store(args, tile, row0, col).
inline constexpr int kPrefetchAhead = 4;  // weight tiles

template <class T, int MB>
void amx_pass(const typename T::Args& a, int m, int j) {
  const size_t xs = T::x_stride(a);
  const unsigned char* x = T::x_bytes(a) + static_cast<size_t>(m) * 16 * xs;
  const unsigned char* w = T::w_bytes(a, j);
  _tile_zero(0);
  if constexpr (MB > 1) _tile_zero(1);
  if constexpr (MB > 2) _tile_zero(2);
  if constexpr (MB > 3) _tile_zero(3);
  const int chunks = a.kp / T::kTileDepth;
  for (int k = 0; k < chunks; ++k) {
    const unsigned char* xk = x + static_cast<size_t>(k) * 64;
    const unsigned char* wk = w + static_cast<size_t>(k) * 1024;
    // The weight tile a few chunks ahead: each is used by at most 4 products and comes from L3 or memory
    // (perf put ~40% of the pass on the load of B without it).
    for (int line = 0; line < 16; ++line)
      _mm_prefetch(reinterpret_cast<const char*>(wk + kPrefetchAhead * 1024 + line * 64), _MM_HINT_T0);
    if (k % 2 == 0) {
      _tile_loadd(6, wk, 64);
      _tile_loadd(4, xk, xs);
      T::template dp<0, 4, 6>();
      if constexpr (MB > 1) {
        _tile_loadd(5, xk + 16 * xs, xs);
        T::template dp<1, 5, 6>();
      }
      if constexpr (MB > 2) {
        _tile_loadd(4, xk + 32 * xs, xs);
        T::template dp<2, 4, 6>();
      }
      if constexpr (MB > 3) {
        _tile_loadd(5, xk + 48 * xs, xs);
        T::template dp<3, 5, 6>();
      }
    } else {
      _tile_loadd(7, wk, 64);
      _tile_loadd(5, xk, xs);
      T::template dp<0, 5, 7>();
      if constexpr (MB > 1) {
        _tile_loadd(4, xk + 16 * xs, xs);
        T::template dp<1, 4, 7>();
      }
      if constexpr (MB > 2) {
        _tile_loadd(5, xk + 32 * xs, xs);
        T::template dp<2, 5, 7>();
      }
      if constexpr (MB > 3) {
        _tile_loadd(4, xk + 48 * xs, xs);
        T::template dp<3, 4, 7>();
      }
    }
  }
  typename T::Acc c[16][16];
  _tile_stored(0, c, 64);
  T::store(a, c, m * 16, j * 16);
  if constexpr (MB > 1) {
    _tile_stored(1, c, 64);
    T::store(a, c, (m + 1) * 16, j * 16);
  }
  if constexpr (MB > 2) {
    _tile_stored(2, c, 64);
    T::store(a, c, (m + 2) * 16, j * 16);
  }
  if constexpr (MB > 3) {
    _tile_stored(3, c, 64);
    T::store(a, c, (m + 3) * 16, j * 16);
  }
}

// Every column block of every range, for all the rows in groups of up to 4 row blocks.
template <class T>
void amx_gemm(const typename T::Args& a) {
  const TileSession tiles;
  const int row_blocks = (a.rows + 15) / 16;
  for (int q = 0; q < a.n; ++q)
    for (int j = a.cols[q].begin / 16; j < a.cols[q].end / 16; ++j)
      for (int m = 0; m < row_blocks; m += 4) {
        switch (row_blocks - m < 4 ? row_blocks - m : 4) {
          case 4:
            amx_pass<T, 4>(a, m, j);
            break;
          case 3:
            amx_pass<T, 3>(a, m, j);
            break;
          case 2:
            amx_pass<T, 2>(a, m, j);
            break;
          default:
            amx_pass<T, 1>(a, m, j);
        }
      }
}

}  // namespace

}  // namespace lstmlm::kernels
