// The int8 kernel on AMX-INT8: C (16 x 16 int32) += A (16 rows x 64 signed inputs) B (64 inputs x 16
// columns) per tdpbssd, 2 x 2 C tiles per pass, then each C tile turned into fp32 by int8.hpp's formula
// with AVX-512. Compiled with -mamx-tile -mamx-int8 and AVX-512 (CMakeLists.txt); called only where the
// CPU and the kernel allow AMX (cpu.cpp).
#include "kernels/amx.hpp"

#include "kernels/int8/int8.hpp"

namespace lstmlm::kernels::int8 {

namespace {

// _mm512_cvtepi32_ps without its _mm512_undefined_ps(), which GCC 12 reports as uninitialized (bug 105593).
inline __m512 to_float(__m512i v) { return _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), 0xffff, v); }

constexpr int kTileK = 64;           // int8 inputs per A tile row
constexpr int kTileBytes = 16 * 64;  // one tile

void store(const Args& a, const int32_t (&c)[16][16], int r0, int col) {
  const __m512 sw = _mm512_loadu_ps(a.sw + col);
  for (int r = 0; r < 16 && r0 + r < a.rows; ++r) {
    const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(a.sx[r0 + r]), sw);
    const __m512 init = a.init ? _mm512_loadu_ps(a.init[r0 + r] + col) : _mm512_setzero_ps();
    const __m512 acc = to_float(_mm512_loadu_si512(c[r]));
    _mm512_storeu_ps(a.out[r0 + r] + col, _mm512_fmadd_ps(acc, scale, init));
  }
}

template <int MB, int NB>
void pass(const Args& a, int m, int j) {
  const size_t x_stride = static_cast<size_t>(a.kp);
  const int8_t* x0 = a.x + static_cast<size_t>(m) * 16 * x_stride;
  const int8_t* x1 = x0 + 16 * x_stride;
  const int8_t* w0 = a.block(j);
  const int8_t* w1 = a.block(j + 1);
  _tile_zero(0);
  if constexpr (NB == 2) _tile_zero(1);
  if constexpr (MB == 2) _tile_zero(2);
  if constexpr (MB == 2 && NB == 2) _tile_zero(3);
  for (int k = 0; k < a.kp / kTileK; ++k) {
    _tile_loadd(4, x0 + static_cast<size_t>(k) * kTileK, x_stride);
    _tile_loadd(6, w0 + static_cast<size_t>(k) * kTileBytes, 64);
    _tile_dpbssd(0, 4, 6);
    if constexpr (NB == 2) {
      _tile_loadd(7, w1 + static_cast<size_t>(k) * kTileBytes, 64);
      _tile_dpbssd(1, 4, 7);
    }
    if constexpr (MB == 2) {
      _tile_loadd(5, x1 + static_cast<size_t>(k) * kTileK, x_stride);
      _tile_dpbssd(2, 5, 6);
      if constexpr (NB == 2) _tile_dpbssd(3, 5, 7);
    }
  }
  alignas(64) int32_t c[16][16];
  _tile_stored(0, c, 64);
  store(a, c, m * 16, j * 16);
  if constexpr (NB == 2) {
    _tile_stored(1, c, 64);
    store(a, c, m * 16, (j + 1) * 16);
  }
  if constexpr (MB == 2) {
    _tile_stored(2, c, 64);
    store(a, c, (m + 1) * 16, j * 16);
  }
  if constexpr (MB == 2 && NB == 2) {
    _tile_stored(3, c, 64);
    store(a, c, (m + 1) * 16, (j + 1) * 16);
  }
}

}  // namespace

void dot_amx(const Args& a) {
  const TileSession tiles;
  const int row_blocks = (a.rows + 15) / 16;
  for (int q = 0; q < a.n; ++q) {
    const int end = a.cols[q].end / 16;
    for (int j = a.cols[q].begin / 16; j < end; j += 2) {
      const bool two_cols = j + 1 < end;
      for (int m = 0; m < row_blocks; m += 2) {
        const bool two_rows = m + 1 < row_blocks;
        if (two_rows && two_cols)
          pass<2, 2>(a, m, j);
        else if (two_rows)
          pass<2, 1>(a, m, j);
        else if (two_cols)
          pass<1, 2>(a, m, j);
        else
          pass<1, 1>(a, m, j);
      }
    }
  }
}

}  // namespace lstmlm::kernels::int8
