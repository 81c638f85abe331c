// The int8 kernel on AMX-INT8: C (16 x 16 int32) += A (16 rows x 64 signed inputs) B (64 inputs x 16
// columns) per tdpbssd (amx.hpp's driver), then each C tile turned into fp32 by int8.hpp's formula with
// AVX-512. Compiled with -mamx-tile -mamx-int8 and AVX-512 (CMakeLists.txt); called only where the CPU and
// the kernel allow AMX (cpu.cpp).
#include "kernels/amx.hpp"

#include "kernels/int8/int8.hpp"

namespace lstmlm::kernels::int8 {

namespace {

// _mm512_cvtepi32_ps without its _mm512_undefined_ps(), which GCC 12 reports as uninitialized (bug 105593).
inline __m512 to_float(__m512i v) { return _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), 0xffff, v); }

struct Int8Tiles {
  using Args = int8::Args;
  using Acc = int32_t;
  static constexpr int kTileDepth = 64;  // int8 inputs per A tile row
  static size_t x_stride(const Args& a) { return static_cast<size_t>(a.kp); }
  static const unsigned char* x_bytes(const Args& a) { return reinterpret_cast<const unsigned char*>(a.x); }
  static const unsigned char* w_bytes(const Args& a, int j) {
    return reinterpret_cast<const unsigned char*>(a.block(j));
  }
  // GCC's tile intrinsics paste their operands into the asm text: literals only, one branch per use.
  template <int C, int A, int B>
  static void dp() {
    if constexpr (C == 0 && A == 4 && B == 6) {
      _tile_dpbssd(0, 4, 6);
    } else if constexpr (C == 1 && A == 4 && B == 7) {
      _tile_dpbssd(1, 4, 7);
    } else if constexpr (C == 2 && A == 5 && B == 6) {
      _tile_dpbssd(2, 5, 6);
    } else if constexpr (C == 3 && A == 5 && B == 7) {
      _tile_dpbssd(3, 5, 7);
    } else {
      static_assert(C < 0, "a tile combination amx_pass does not use");
    }
  }
  static void store(const Args& a, const int32_t (&c)[16][16], int r0, int col) {
    const __m512 sw = _mm512_loadu_ps(a.sw + col);
    for (int r = 0; r < 16 && r0 + r < a.rows; ++r) {
      const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(a.sx[r0 + r]), sw);
      const __m512 init = a.init ? _mm512_loadu_ps(a.init[r0 + r] + col) : _mm512_setzero_ps();
      _mm512_storeu_ps(a.out[r0 + r] + col, _mm512_fmadd_ps(to_float(_mm512_loadu_si512(c[r])), scale, init));
    }
  }
};

}  // namespace

void dot_amx(const Args& a) { amx_gemm<Int8Tiles>(a); }

}  // namespace lstmlm::kernels::int8
