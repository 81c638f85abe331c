// The int8 kernel on AVX512-VNNI: vpdpbusd multiplies unsigned by signed bytes, so the input bytes are
// offset by 128 (x ^ 0x80) and 128 x each column's sum is subtracted after the loop: the exact int32
// dot product. Tiles of 4 rows x 4 blocks of 16 columns. Compiled with -mavx512vnni and AVX-512
// (CMakeLists.txt); called only where the CPU has them.
#include <immintrin.h>

#include "kernels/int8/int8.hpp"

namespace lstmlm::kernels::int8 {

namespace {

// _mm512_cvtepi32_ps without its _mm512_undefined_ps(), which GCC 12 reports as uninitialized (bug 105593).
inline __m512 to_float(__m512i v) { return _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), 0xffff, v); }

template <int R, int NB>
inline void tile(const Args& a, int r0, int j) {
  __m512i acc[R][NB];
  for (int r = 0; r < R; ++r)
    for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_setzero_si512();
  const int8_t* w[NB];
  for (int b = 0; b < NB; ++b) w[b] = a.block(j + b);
  const int32_t* x[R];
  for (int r = 0; r < R; ++r)
    x[r] = reinterpret_cast<const int32_t*>(a.x + static_cast<size_t>(r0 + r) * static_cast<size_t>(a.kp));
  const __m512i offset = _mm512_set1_epi32(static_cast<int>(0x80808080u));
  for (int p = 0; p < a.kp / 4; ++p) {
    __m512i wv[NB];
    for (int b = 0; b < NB; ++b) wv[b] = _mm512_loadu_si512(w[b] + static_cast<size_t>(p) * 64);
    for (int r = 0; r < R; ++r) {
      const __m512i xv = _mm512_xor_si512(_mm512_set1_epi32(x[r][p]), offset);
      for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], xv, wv[b]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int b = 0; b < NB; ++b) {
      const int col = 16 * (j + b);
      const __m512i dot = _mm512_sub_epi32(acc[r][b], _mm512_loadu_si512(a.comp + col));
      const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(a.sx[r0 + r]), _mm512_loadu_ps(a.sw + col));
      const __m512 init = a.init ? _mm512_loadu_ps(a.init[r0 + r] + col) : _mm512_setzero_ps();
      _mm512_storeu_ps(a.out[r0 + r] + col, _mm512_fmadd_ps(to_float(dot), scale, init));
    }
}

template <int R>
inline void row_tiles(const Args& a, int r0) {
  for (int q = 0; q < a.n; ++q) {
    int j = a.cols[q].begin / 16;
    const int end = a.cols[q].end / 16;
    for (; j + 4 <= end; j += 4) tile<R, 4>(a, r0, j);
    for (; j < end; ++j) tile<R, 1>(a, r0, j);
  }
}

}  // namespace

void dot_vnni(const Args& a) {
  int r = 0;
  for (; r + 4 <= a.rows; r += 4) row_tiles<4>(a, r);
  for (; r < a.rows; ++r) row_tiles<1>(a, r);
}

}  // namespace lstmlm::kernels::int8
