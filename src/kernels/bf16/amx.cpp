// The bf16 kernel on AMX-BF16: C (16 rows x 16 columns, fp32) += A (16 rows x 32 inputs) B (32 inputs x
// 16 columns) per tdpbf16ps (amx.hpp's driver). Rows past `rows` are the zero padding of the input buffer;
// their results are dropped. Compiled with -mamx-tile -mamx-bf16 (CMakeLists.txt); called only where the
// CPU and the kernel allow AMX (cpu.cpp).
#include "kernels/amx.hpp"

#include "kernels/bf16/bf16.hpp"

namespace lstmlm::kernels::bf16 {

namespace {

struct Bf16Tiles {
  using Args = bf16::Args;
  using Acc = float;
  static constexpr int kTileDepth = 32;  // bf16 inputs per A tile row
  static size_t x_stride(const Args& a) { return static_cast<size_t>(a.kp) * sizeof(uint16_t); }
  static const unsigned char* x_bytes(const Args& a) { return reinterpret_cast<const unsigned char*>(a.x); }
  static const unsigned char* w_bytes(const Args& a, int j) {
    return reinterpret_cast<const unsigned char*>(a.block(j));
  }
  // GCC's tile intrinsics paste their operands into the asm text: literals only, one branch per use.
  template <int C, int A, int B>
  static void dp() {
    if constexpr (C == 0 && A == 4 && B == 6) {
      _tile_dpbf16ps(0, 4, 6);
    } else if constexpr (C == 1 && A == 4 && B == 7) {
      _tile_dpbf16ps(1, 4, 7);
    } else if constexpr (C == 2 && A == 5 && B == 6) {
      _tile_dpbf16ps(2, 5, 6);
    } else if constexpr (C == 3 && A == 5 && B == 7) {
      _tile_dpbf16ps(3, 5, 7);
    } else {
      static_assert(C < 0, "a tile combination amx_pass does not use");
    }
  }
  // out = init + C for the rows of the tile that exist.
  static void store(const Args& a, const float (&c)[16][16], int r0, int col) {
    for (int r = 0; r < 16 && r0 + r < a.rows; ++r) {
      const __m512 v = _mm512_loadu_ps(c[r]);
      _mm512_storeu_ps(a.out[r0 + r] + col,
                       a.init ? _mm512_add_ps(_mm512_loadu_ps(a.init[r0 + r] + col), v) : v);
    }
  }
};

}  // namespace

void dot_amx(const Args& a) { amx_gemm<Bf16Tiles>(a); }

}  // namespace lstmlm::kernels::bf16
