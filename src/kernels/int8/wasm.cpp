// The int8 kernel on WebAssembly SIMD128 (the WebAssembly build only, web/wasm.cmake): each quad of a block's
// 16 columns (16 bytes: 4 columns x 4 inputs) widened to int16 in two halves, i32x4.dot_i16x8_s multiplying
// them by the row's quad (|x|, |w| <= 127: exact products, exact pair sums) into two int32 per column, a
// last pairwise add per column at the end: the exact dot product, signed by signed. The epilogue is every
// level's, out = fma(float(acc), sx sw, init) rounded once (fma.hpp), so int8 gives the native bits here too.
// Tiles of 2 rows x 2 blocks of 16 columns (a lone row 4 blocks), in lowp/tiling.hpp's order.
#include <wasm_simd128.h>

#include "kernels/fma.hpp"
#include "kernels/int8/int8.hpp"
#include "kernels/lowp/tiling.hpp"

namespace lstmlm::kernels::int8 {

namespace {

struct Wasm {
  static constexpr int kR = 2, kNB = 2, kR2 = kR, kNB2 = kNB, kNB1 = 4;
  template <int R, int NB>
  [[gnu::always_inline]] static void tile(const Args& a, int r0, int j) {
    // acc[r][b][h][e]: columns 4h..4h+3 of block b, half e (columns 4h, 4h+1 or 4h+2, 4h+3), as pairs of
    // partial sums.
    v128_t acc[R][NB][4][2];
    for (int r = 0; r < R; ++r)
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 4; ++h) acc[r][b][h][0] = acc[r][b][h][1] = wasm_i32x4_splat(0);
    const int8_t* w[NB];
    for (int b = 0; b < NB; ++b) w[b] = a.block(j + b);
    const int8_t* x[R];
    for (int r = 0; r < R; ++r) x[r] = a.x + static_cast<size_t>(r0 + r) * static_cast<size_t>(a.kp);
    for (int p = 0; p < a.kp / 4; ++p) {
      v128_t xv[R];  // the row's quad as int16, twice: x0 x1 x2 x3 x0 x1 x2 x3
      for (int r = 0; r < R; ++r) xv[r] = wasm_i16x8_extend_low_i8x16(wasm_v128_load32_splat(x[r] + 4 * p));
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 4; ++h) {
          const v128_t wv = wasm_v128_load(w[b] + static_cast<size_t>(p) * 64 + 16 * h);
          const v128_t lo = wasm_i16x8_extend_low_i8x16(wv), hi = wasm_i16x8_extend_high_i8x16(wv);
          for (int r = 0; r < R; ++r) {
            acc[r][b][h][0] = wasm_i32x4_add(acc[r][b][h][0], wasm_i32x4_dot_i16x8(lo, xv[r]));
            acc[r][b][h][1] = wasm_i32x4_add(acc[r][b][h][1], wasm_i32x4_dot_i16x8(hi, xv[r]));
          }
        }
    }
    for (int r = 0; r < R; ++r)
      for (int b = 0; b < NB; ++b)
        for (int h = 0; h < 4; ++h) {
          const int col = 16 * (j + b) + 4 * h;
          const v128_t e = acc[r][b][h][0], o = acc[r][b][h][1];
          const v128_t dot =
              wasm_i32x4_add(wasm_i32x4_shuffle(e, o, 0, 2, 4, 6), wasm_i32x4_shuffle(e, o, 1, 3, 5, 7));
          alignas(16) int32_t d[4];
          wasm_v128_store(d, dot);
          const float sx = a.sx[r0 + r];
          float* out = a.out[r0 + r] + col;
          for (int l = 0; l < 4; ++l) {
            const float init = a.init ? a.init[r0 + r][col + l] : 0.0f;
            out[l] = fma_rn(static_cast<float>(d[l]), sx * a.sw[col + l], init);
          }
        }
  }
};

}  // namespace

void dot_wasm(const Args& a) { lowp::run_tiles<Wasm>(a, static_cast<size_t>(a.kp) * 16); }

}  // namespace lstmlm::kernels::int8
