// The int8 kernel on AVX512-VNNI: vpdpbusd multiplies unsigned by signed bytes, so the input rows come
// offset by 128 (gemm.cpp, once per call) and 128 x each column's sum is subtracted after the loop: the
// exact int32 dot product. Tiles of 8 rows x 3 blocks of 16 columns (24 accumulators, 3 weight loads and 8
// broadcasts per 24 vpdpbusd), 4 x 4 for 4 to 7 rows left, a lone row 8 blocks, visited in
// lowp/tiling.hpp's order. Compiled with -mavx512vnni and AVX-512 (CMakeLists.txt); called only where the
// CPU has them.
#include <immintrin.h>

#include "kernels/int8/int8.hpp"
#include "kernels/lowp/tiling.hpp"

namespace lstmlm::kernels::int8 {

namespace {

// _mm512_cvtepi32_ps without its _mm512_undefined_ps(), which GCC 12 reports as uninitialized (bug 105593).
inline __m512 to_float(__m512i v) { return _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), 0xffff, v); }

// acc += x w, the accumulator tied to the instruction's destination. GCC 12 gives _mm512_dpbusd_epi32 an
// untied destination and copies every accumulator through another register (or the stack) around each
// instruction, which halved this kernel's speed.
[[gnu::always_inline]] inline void dpbusd(__m512i& acc, __m512i x, __m512i w) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "vm"(w));
}

// out = fma(float(acc - comp), sx sw, init) for R rows x NB blocks of accumulators.
template <int R, int NB>
[[gnu::always_inline]] inline void store(const Args& a, int r0, int j, const __m512i (&acc)[R][NB]) {
  for (int r = 0; r < R; ++r)
    for (int b = 0; b < NB; ++b) {
      const int col = 16 * (j + b);
      const __m512i dot = _mm512_sub_epi32(acc[r][b], _mm512_loadu_si512(a.comp + col));
      const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(a.sx[r0 + r]), _mm512_loadu_ps(a.sw + col));
      const __m512 init = a.init ? _mm512_loadu_ps(a.init[r0 + r] + col) : _mm512_setzero_ps();
      _mm512_storeu_ps(a.out[r0 + r] + col, _mm512_fmadd_ps(to_float(dot), scale, init));
    }
}

inline const int32_t* row(const Args& a, int r) {
  return reinterpret_cast<const int32_t*>(a.x + static_cast<size_t>(r) * static_cast<size_t>(a.kp));
}
inline __m512i weights(const int8_t* block, int p) {
  return _mm512_loadu_si512(block + static_cast<size_t>(p) * 64);
}

struct Vnni {
  static constexpr int kR = 8, kNB = 3, kR2 = 4, kNB2 = 4, kNB1 = 8;

  // The edge tiles, on arrays (GCC 12 keeps those accumulators in memory with dpbusd() and copies them with
  // the intrinsic: slower, but these tiles see a few percent of the work).
  template <int R, int NB>
  [[gnu::always_inline]] static void tile(const Args& a, int r0, int j) {
    if constexpr (R == 8 && NB == 3) {
      tile8x3(a, r0, j);
    } else if constexpr (R == 4 && NB == 4) {
      tile4x4(a, r0, j);
    } else if constexpr (R == 1 && NB == 8) {
      tile1x8(a, r0, j);
    } else {
      __m512i acc[R][NB];
      for (int r = 0; r < R; ++r)
        for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_setzero_si512();
      for (int p = 0; p < a.kp / 4; ++p) {
        __m512i wv[NB];
        for (int b = 0; b < NB; ++b) wv[b] = weights(a.block(j + b), p);
        for (int r = 0; r < R; ++r) {
          const __m512i xv = _mm512_set1_epi32(row(a, r0 + r)[p]);
          for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], xv, wv[b]);
        }
      }
      store<R, NB>(a, r0, j, acc);
    }
  }

  // The tiles that do nearly all the work (rows in eights, fours; a lone row), with one named variable per
  // accumulator, which GCC keeps in a register of its own.
  static void tile4x4(const Args& a, int r0, int j) {
    const int8_t *w0 = a.block(j), *w1 = a.block(j + 1), *w2 = a.block(j + 2), *w3 = a.block(j + 3);
    const int32_t *x0 = row(a, r0), *x1 = row(a, r0 + 1), *x2 = row(a, r0 + 2), *x3 = row(a, r0 + 3);
    __m512i c00 = _mm512_setzero_si512(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00,
            c13 = c00, c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
    for (int p = 0; p < a.kp / 4; ++p) {
      const __m512i v0 = weights(w0, p), v1 = weights(w1, p), v2 = weights(w2, p), v3 = weights(w3, p);
      __m512i x = _mm512_set1_epi32(x0[p]);
      dpbusd(c00, x, v0), dpbusd(c01, x, v1), dpbusd(c02, x, v2), dpbusd(c03, x, v3);
      x = _mm512_set1_epi32(x1[p]);
      dpbusd(c10, x, v0), dpbusd(c11, x, v1), dpbusd(c12, x, v2), dpbusd(c13, x, v3);
      x = _mm512_set1_epi32(x2[p]);
      dpbusd(c20, x, v0), dpbusd(c21, x, v1), dpbusd(c22, x, v2), dpbusd(c23, x, v3);
      x = _mm512_set1_epi32(x3[p]);
      dpbusd(c30, x, v0), dpbusd(c31, x, v1), dpbusd(c32, x, v2), dpbusd(c33, x, v3);
    }
    const __m512i acc[4][4] = {
        {c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23}, {c30, c31, c32, c33}};
    store<4, 4>(a, r0, j, acc);
  }
  static void tile8x3(const Args& a, int r0, int j) {
    const int8_t *w0 = a.block(j), *w1 = a.block(j + 1), *w2 = a.block(j + 2);
    const int32_t* x[8];
    for (int r = 0; r < 8; ++r) x[r] = row(a, r0 + r);
    __m512i c00 = _mm512_setzero_si512(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00, c20 = c00,
            c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00, c40 = c00, c41 = c00, c42 = c00, c50 = c00,
            c51 = c00, c52 = c00, c60 = c00, c61 = c00, c62 = c00, c70 = c00, c71 = c00, c72 = c00;
    for (int p = 0; p < a.kp / 4; ++p) {
      const __m512i v0 = weights(w0, p), v1 = weights(w1, p), v2 = weights(w2, p);
      __m512i xv;
      xv = _mm512_set1_epi32(x[0][p]);
      dpbusd(c00, xv, v0), dpbusd(c01, xv, v1), dpbusd(c02, xv, v2);
      xv = _mm512_set1_epi32(x[1][p]);
      dpbusd(c10, xv, v0), dpbusd(c11, xv, v1), dpbusd(c12, xv, v2);
      xv = _mm512_set1_epi32(x[2][p]);
      dpbusd(c20, xv, v0), dpbusd(c21, xv, v1), dpbusd(c22, xv, v2);
      xv = _mm512_set1_epi32(x[3][p]);
      dpbusd(c30, xv, v0), dpbusd(c31, xv, v1), dpbusd(c32, xv, v2);
      xv = _mm512_set1_epi32(x[4][p]);
      dpbusd(c40, xv, v0), dpbusd(c41, xv, v1), dpbusd(c42, xv, v2);
      xv = _mm512_set1_epi32(x[5][p]);
      dpbusd(c50, xv, v0), dpbusd(c51, xv, v1), dpbusd(c52, xv, v2);
      xv = _mm512_set1_epi32(x[6][p]);
      dpbusd(c60, xv, v0), dpbusd(c61, xv, v1), dpbusd(c62, xv, v2);
      xv = _mm512_set1_epi32(x[7][p]);
      dpbusd(c70, xv, v0), dpbusd(c71, xv, v1), dpbusd(c72, xv, v2);
    }
    const __m512i acc[8][3] = {{c00, c01, c02}, {c10, c11, c12}, {c20, c21, c22}, {c30, c31, c32},
                               {c40, c41, c42}, {c50, c51, c52}, {c60, c61, c62}, {c70, c71, c72}};
    store<8, 3>(a, r0, j, acc);
  }
  static void tile1x8(const Args& a, int r0, int j) {
    const int8_t *w0 = a.block(j), *w1 = a.block(j + 1), *w2 = a.block(j + 2), *w3 = a.block(j + 3),
                 *w4 = a.block(j + 4), *w5 = a.block(j + 5), *w6 = a.block(j + 6), *w7 = a.block(j + 7);
    const int32_t* x0 = row(a, r0);
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    for (int p = 0; p < a.kp / 4; ++p) {
      const __m512i x = _mm512_set1_epi32(x0[p]);
      dpbusd(c0, x, weights(w0, p)), dpbusd(c1, x, weights(w1, p)), dpbusd(c2, x, weights(w2, p));
      dpbusd(c3, x, weights(w3, p)), dpbusd(c4, x, weights(w4, p)), dpbusd(c5, x, weights(w5, p));
      dpbusd(c6, x, weights(w6, p)), dpbusd(c7, x, weights(w7, p));
    }
    const __m512i acc[1][8] = {{c0, c1, c2, c3, c4, c5, c6, c7}};
    store<1, 8>(a, r0, j, acc);
  }
};

}  // namespace

void dot_vnni(const Args& a) { lowp::run_tiles<Vnni>(a, static_cast<size_t>(a.kp) * 16); }

}  // namespace lstmlm::kernels::int8
