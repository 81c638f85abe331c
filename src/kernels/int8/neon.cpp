// The int8 kernel on aarch64's NEON without the dot-product extension: SMULL multiplies the bytes of a
// quad into int16 (|x|, |w| <= 127: exact), SADALP adds neighbouring pairs into int32, a last ADDP the
// two pairs of a column: the exact dot product, signed by signed (no offset). Tiles of 2 rows x 2 blocks
// of 16 columns (a lone row 4 blocks), visited in lowp/tiling.hpp's order. Called only where the CPU has
// Advanced SIMD.
#include <arm_neon.h>

#include "kernels/int8/int8.hpp"
#include "kernels/lowp/tiling.hpp"

namespace lstmlm::kernels::int8 {

namespace {

struct Neon {
  static constexpr int kR = 2, kNB = 2, kR2 = kR, kNB2 = kNB, kNB1 = 4;
  template <int R, int NB>
  [[gnu::always_inline]] static void tile(const Args& a, int r0, int j) {
    // acc[r][b][h]: columns 4h..4h+3 of block b as pairs of partial sums (two int32 per column).
    int32x4_t acc[R][NB][4][2];
    for (int r = 0; r < R; ++r)
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 4; ++h) acc[r][b][h][0] = acc[r][b][h][1] = vdupq_n_s32(0);
    const int8_t* w[NB];
    for (int b = 0; b < NB; ++b) w[b] = a.block(j + b);
    const int32_t* x[R];
    for (int r = 0; r < R; ++r)
      x[r] = reinterpret_cast<const int32_t*>(a.x + static_cast<size_t>(r0 + r) * static_cast<size_t>(a.kp));
    for (int p = 0; p < a.kp / 4; ++p) {
      int8x16_t wv[NB][4];
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 4; ++h) wv[b][h] = vld1q_s8(w[b] + static_cast<size_t>(p) * 64 + 16 * h);
      for (int r = 0; r < R; ++r) {
        const int8x16_t xv = vreinterpretq_s8_s32(vdupq_n_s32(x[r][p]));
        for (int b = 0; b < NB; ++b)
          for (int h = 0; h < 4; ++h) {
            acc[r][b][h][0] = vpadalq_s16(acc[r][b][h][0], vmull_s8(vget_low_s8(wv[b][h]), vget_low_s8(xv)));
            acc[r][b][h][1] = vpadalq_s16(acc[r][b][h][1], vmull_high_s8(wv[b][h], xv));
          }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 4; ++h) {
          const int col = 16 * (j + b) + 4 * h;
          const int32x4_t dot = vpaddq_s32(acc[r][b][h][0], acc[r][b][h][1]);
          const float32x4_t scale = vmulq_f32(vdupq_n_f32(a.sx[r0 + r]), vld1q_f32(a.sw + col));
          const float32x4_t init = a.init ? vld1q_f32(a.init[r0 + r] + col) : vdupq_n_f32(0.0f);
          vst1q_f32(a.out[r0 + r] + col, vfmaq_f32(init, vcvtq_f32_s32(dot), scale));
        }
  }
};

}  // namespace

void dot_neon(const Args& a) { lowp::run_tiles<Neon>(a, static_cast<size_t>(a.kp) * 16); }

}  // namespace lstmlm::kernels::int8
