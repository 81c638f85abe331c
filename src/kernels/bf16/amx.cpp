// The bf16 kernel on AMX-BF16: C (16 rows x 16 columns, fp32) += A (16 rows x 32 inputs) B (32 inputs x
// 16 columns) per tdpbf16ps, 2 x 2 C tiles per pass (32 rows x 32 columns), so each A and B tile loaded
// serves two products. Rows past `rows` are the zero padding of the input buffer; their results are
// dropped. Compiled with -mamx-tile -mamx-bf16 (CMakeLists.txt); called only where the CPU and the
// kernel allow AMX (cpu.cpp).
#include "kernels/amx.hpp"

#include "kernels/bf16/bf16.hpp"

namespace lstmlm::kernels::bf16 {

namespace {

constexpr int kTileK = 32;           // bf16 inputs per A tile row
constexpr int kTileBytes = 16 * 64;  // one tile

// out = init + C for the rows of the tile that exist.
void store(const Args& a, const float (&c)[16][16], int r0, int col) {
  for (int r = 0; r < 16 && r0 + r < a.rows; ++r) {
    const __m512 v = _mm512_load_ps(c[r]);
    _mm512_storeu_ps(a.out[r0 + r] + col,
                     a.init ? _mm512_add_ps(_mm512_loadu_ps(a.init[r0 + r] + col), v) : v);
  }
}

template <int MB, int NB>
void pass(const Args& a, int m, int j) {
  const size_t x_stride = static_cast<size_t>(a.kp) * sizeof(uint16_t);
  const auto* x0 = reinterpret_cast<const unsigned char*>(a.x) + static_cast<size_t>(m) * 16 * x_stride;
  const unsigned char* x1 = x0 + 16 * x_stride;
  const auto* w0 = reinterpret_cast<const unsigned char*>(a.block(j));
  const auto* w1 = reinterpret_cast<const unsigned char*>(a.block(j + 1));
  _tile_zero(0);
  if constexpr (NB == 2) _tile_zero(1);
  if constexpr (MB == 2) _tile_zero(2);
  if constexpr (MB == 2 && NB == 2) _tile_zero(3);
  for (int k = 0; k < a.kp / kTileK; ++k) {
    _tile_loadd(4, x0 + static_cast<size_t>(k) * kTileK * 2, x_stride);
    _tile_loadd(6, w0 + static_cast<size_t>(k) * kTileBytes, 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NB == 2) {
      _tile_loadd(7, w1 + static_cast<size_t>(k) * kTileBytes, 64);
      _tile_dpbf16ps(1, 4, 7);
    }
    if constexpr (MB == 2) {
      _tile_loadd(5, x1 + static_cast<size_t>(k) * kTileK * 2, x_stride);
      _tile_dpbf16ps(2, 5, 6);
      if constexpr (NB == 2) _tile_dpbf16ps(3, 5, 7);
    }
  }
  alignas(64) float c[16][16];
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

}  // namespace lstmlm::kernels::bf16
