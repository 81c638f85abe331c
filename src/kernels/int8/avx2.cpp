// The int8 kernel on AVX2: vpmaddubsw on |x| and w with x's sign (vpsignb) gives x w per byte pair in
// int16 without saturation (|x|, |w| <= 127: at most 2 x 127 x 127 = 32258), vpmaddwd sums the pairs into
// int32: the exact dot product. Tiles of 2 rows x 2 blocks of 16 columns (two 8-column halves each; a lone
// row 4 blocks), visited in lowp/tiling.hpp's order. Compiled with -mavx2 -mfma (CMakeLists.txt).
#include <immintrin.h>

#include "kernels/int8/int8.hpp"
#include "kernels/lowp/tiling.hpp"

namespace lstmlm::kernels::int8 {

namespace {

struct Avx2 {
  static constexpr int kR = 2, kNB = 2, kR2 = kR, kNB2 = kNB, kNB1 = 4;
  template <int R, int NB>
  [[gnu::always_inline]] static void tile(const Args& a, int r0, int j) {
    __m256i acc[R][NB][2];
    for (int r = 0; r < R; ++r)
      for (int b = 0; b < NB; ++b) acc[r][b][0] = acc[r][b][1] = _mm256_setzero_si256();
    const int8_t* w[NB];
    for (int b = 0; b < NB; ++b) w[b] = a.block(j + b);
    const int32_t* x[R];
    for (int r = 0; r < R; ++r)
      x[r] = reinterpret_cast<const int32_t*>(a.x + static_cast<size_t>(r0 + r) * static_cast<size_t>(a.kp));
    const __m256i ones = _mm256_set1_epi16(1);
    for (int p = 0; p < a.kp / 4; ++p) {
      __m256i wv[NB][2];
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 2; ++h)
          wv[b][h] = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(w[b] + static_cast<size_t>(p) * 64 + 32 * h));
      for (int r = 0; r < R; ++r) {
        const __m256i xv = _mm256_set1_epi32(x[r][p]);
        const __m256i ax = _mm256_sign_epi8(xv, xv);
        for (int b = 0; b < NB; ++b)
          for (int h = 0; h < 2; ++h) {
            const __m256i prod = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(wv[b][h], xv));
            acc[r][b][h] = _mm256_add_epi32(acc[r][b][h], _mm256_madd_epi16(prod, ones));
          }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 2; ++h) {
          const int col = 16 * (j + b) + 8 * h;
          const __m256 scale = _mm256_mul_ps(_mm256_set1_ps(a.sx[r0 + r]), _mm256_loadu_ps(a.sw + col));
          const __m256 init = a.init ? _mm256_loadu_ps(a.init[r0 + r] + col) : _mm256_setzero_ps();
          _mm256_storeu_ps(a.out[r0 + r] + col,
                           _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][b][h]), scale, init));
        }
  }
};

}  // namespace

void dot_avx2(const Args& a) { lowp::run_tiles<Avx2>(a, static_cast<size_t>(a.kp) * 16); }

}  // namespace lstmlm::kernels::int8
