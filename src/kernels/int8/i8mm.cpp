// The int8 kernel on aarch64's I8MM: SMMLA multiplies a 2 x 8 matrix of signed bytes (two rows, eight
// inputs) by an 8 x 2 one (eight inputs, two columns) into a 2 x 2 int32 accumulator: exact sums, signed by
// signed, so the bits of every other int8 level. Kp is a multiple of 8 here (gemm.cpp); the columns' two
// quads of inputs are interleaved into SMMLA's operand as the weights are loaded (ZIP1/ZIP2 of int8.hpp's
// layout), and the 2 x 2 results back into rows before the store. Tiles of 4 rows x 1 block of 16 columns, 2
// x 2 for 2 or 3 rows left, a lone row (paired with itself) 2 blocks, visited in lowp/tiling.hpp's order.
// Compiled with +i8mm (CMakeLists.txt); called only where the CPU has it.
#include <arm_neon.h>

#include "kernels/int8/int8.hpp"
#include "kernels/lowp/tiling.hpp"

namespace lstmlm::kernels::int8 {

namespace {

struct I8mm {
  static constexpr int kR = 4, kNB = 1, kR2 = 2, kNB2 = 2, kNB1 = 2;
  template <int R, int NB>
  [[gnu::always_inline]] static void tile(const Args& a, int r0, int j) {
    constexpr int P = (R + 1) / 2;  // row pairs; an odd last row is paired with itself
    // acc[q][b][c]: rows 2q, 2q + 1 by columns 2c, 2c + 1 of block b.
    int32x4_t acc[P][NB][8];
    for (int q = 0; q < P; ++q)
      for (int b = 0; b < NB; ++b)
        for (int c = 0; c < 8; ++c) acc[q][b][c] = vdupq_n_s32(0);
    const int8_t* w[NB];
    for (int b = 0; b < NB; ++b) w[b] = a.block(j + b);
    const int8_t* x[P][2];
    for (int q = 0; q < P; ++q)
      for (int i = 0; i < 2; ++i) {
        const int r = r0 + (2 * q + i < R ? 2 * q + i : R - 1);
        x[q][i] = a.x + static_cast<size_t>(r) * static_cast<size_t>(a.kp);
      }
    for (int p = 0; p < a.kp / 8; ++p) {
      int8x16_t wv[NB][8];
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 4; ++h) {
          const int8_t* lo = w[b] + static_cast<size_t>(p) * 128 + 16 * h;  // inputs 8p..8p+3
          const int32x4_t k0 = vreinterpretq_s32_s8(vld1q_s8(lo));
          const int32x4_t k1 = vreinterpretq_s32_s8(vld1q_s8(lo + 64));  // inputs 8p+4..8p+7
          wv[b][2 * h] = vreinterpretq_s8_s32(vzip1q_s32(k0, k1));
          wv[b][2 * h + 1] = vreinterpretq_s8_s32(vzip2q_s32(k0, k1));
        }
      for (int q = 0; q < P; ++q) {
        const int8x16_t xv = vcombine_s8(vld1_s8(x[q][0] + 8 * p), vld1_s8(x[q][1] + 8 * p));
        for (int b = 0; b < NB; ++b)
          for (int c = 0; c < 8; ++c) acc[q][b][c] = vmmlaq_s32(acc[q][b][c], xv, wv[b][c]);
      }
    }
    for (int q = 0; q < P; ++q)
      for (int i = 0; i < 2 && 2 * q + i < R; ++i) {
        const int r = r0 + 2 * q + i;
        for (int b = 0; b < NB; ++b)
          for (int h = 0; h < 4; ++h) {
            const int col = 16 * (j + b) + 4 * h;
            const int64x2_t c01 = vreinterpretq_s64_s32(acc[q][b][2 * h]);
            const int64x2_t c23 = vreinterpretq_s64_s32(acc[q][b][2 * h + 1]);
            const int32x4_t dot = vreinterpretq_s32_s64(i == 0 ? vzip1q_s64(c01, c23) : vzip2q_s64(c01, c23));
            const float32x4_t scale = vmulq_f32(vdupq_n_f32(a.sx[r]), vld1q_f32(a.sw + col));
            const float32x4_t init = a.init ? vld1q_f32(a.init[r] + col) : vdupq_n_f32(0.0f);
            vst1q_f32(a.out[r] + col, vfmaq_f32(init, vcvtq_f32_s32(dot), scale));
          }
      }
  }
};

}  // namespace

void dot_i8mm(const Args& a) { lowp::run_tiles<I8mm>(a, static_cast<size_t>(a.kp) * 16); }

}  // namespace lstmlm::kernels::int8
