// The int8 kernel on aarch64's dot-product extension: SDOT adds the four products of a quad of signed
// bytes into each int32 lane, exactly lstmlm's symmetric int8 (signed by signed, no offset), and int8.hpp's
// layout is its operand as it stands (four columns' quads per 16-byte vector). Tiles of 4 rows x 1 block
// of 16 columns (16 accumulators, 4 weight loads and 4 broadcasts per 16 SDOT), a lone row 4 blocks,
// visited in lowp/tiling.hpp's order. Compiled with +dotprod (CMakeLists.txt); called only where the CPU
// has it.
#include <arm_neon.h>

#include "kernels/int8/int8.hpp"
#include "kernels/lowp/tiling.hpp"

namespace lstmlm::kernels::int8 {

namespace {

struct Sdot {
  static constexpr int kR = 4, kNB = 1, kR2 = 2, kNB2 = 2, kNB1 = 4;
  template <int R, int NB>
  [[gnu::always_inline]] static void tile(const Args& a, int r0, int j) {
    int32x4_t acc[R][NB][4];
    for (int r = 0; r < R; ++r)
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 4; ++h) acc[r][b][h] = vdupq_n_s32(0);
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
          for (int h = 0; h < 4; ++h) acc[r][b][h] = vdotq_s32(acc[r][b][h], wv[b][h], xv);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 4; ++h) {
          const int col = 16 * (j + b) + 4 * h;
          const float32x4_t scale = vmulq_f32(vdupq_n_f32(a.sx[r0 + r]), vld1q_f32(a.sw + col));
          const float32x4_t init = a.init ? vld1q_f32(a.init[r0 + r] + col) : vdupq_n_f32(0.0f);
          vst1q_f32(a.out[r0 + r] + col, vfmaq_f32(init, vcvtq_f32_s32(acc[r][b][h]), scale));
        }
  }
};

}  // namespace

void dot_sdot(const Args& a) { lowp::run_tiles<Sdot>(a, static_cast<size_t>(a.kp) * 16); }

}  // namespace lstmlm::kernels::int8
