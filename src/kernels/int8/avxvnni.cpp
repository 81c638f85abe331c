// The int8 kernel on AVX-VNNI (the VEX form of vpdpbusd, 8 columns per instruction; Alder Lake and later,
// Zen 5): as dot_vnni, the input rows offset by 128 and 128 x each column's sum subtracted after the loop,
// the exact int32 dot product. Tiles of 3 rows x 2 blocks of 16 columns (12 accumulators of the 16 ymm
// registers VEX can name; the weights are memory operands), a lone row 4 blocks, visited in
// lowp/tiling.hpp's order. Compiled with -mavx2 -mfma -mavxvnni (CMakeLists.txt); called only where the CPU
// has AVX-VNNI.
#include <immintrin.h>

#include "kernels/int8/int8.hpp"
#include "kernels/lowp/tiling.hpp"

namespace lstmlm::kernels::int8 {

namespace {

struct AvxVnni {
  static constexpr int kR = 3, kNB = 2, kR2 = kR, kNB2 = kNB, kNB1 = 4;
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
    for (int p = 0; p < a.kp / 4; ++p)
      for (int r = 0; r < R; ++r) {
        const __m256i xv = _mm256_set1_epi32(x[r][p]);
        for (int b = 0; b < NB; ++b)
          for (int h = 0; h < 2; ++h) {
            const auto* wp = reinterpret_cast<const __m256i*>(w[b] + static_cast<size_t>(p) * 64 + 32 * h);
            acc[r][b][h] = _mm256_dpbusd_avx_epi32(acc[r][b][h], xv, _mm256_loadu_si256(wp));
          }
      }
    for (int r = 0; r < R; ++r)
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 2; ++h) {
          const int col = 16 * (j + b) + 8 * h;
          const __m256i comp = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.comp + col));
          const __m256 scale = _mm256_mul_ps(_mm256_set1_ps(a.sx[r0 + r]), _mm256_loadu_ps(a.sw + col));
          const __m256 init = a.init ? _mm256_loadu_ps(a.init[r0 + r] + col) : _mm256_setzero_ps();
          const __m256 dot = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r][b][h], comp));
          _mm256_storeu_ps(a.out[r0 + r] + col, _mm256_fmadd_ps(dot, scale, init));
        }
  }
};

}  // namespace

void dot_avxvnni(const Args& a) { lowp::run_tiles<AvxVnni>(a, static_cast<size_t>(a.kp) * 16); }

}  // namespace lstmlm::kernels::int8
