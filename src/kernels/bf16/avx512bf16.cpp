// The bf16 kernel on AVX512-BF16: vdpbf16ps, one pair of inputs for 16 columns per instruction. Compiled with
// -mavx512bf16 and AVX-512 (CMakeLists.txt); called only where the CPU has them.
#include <immintrin.h>

#include "kernels/bf16/tiles.hpp"

namespace lstmlm::kernels::bf16 {

namespace {

struct Avx512Bf16 {
  static constexpr int kR = 4, kNB = 4, kR2 = kR, kNB2 = kNB, kNB1 = 8;
  using V = __m512;
  using W = __m512i;
  using X = __m512i;
  static V init(const float* p) { return p ? _mm512_loadu_ps(p) : _mm512_setzero_ps(); }
  static W weights(const uint16_t* p) { return _mm512_loadu_si512(p); }
  static X pair(uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  static V step(V acc, X x, W w) { return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
};

}  // namespace

void dot_avx512(const Args& a) { run<Avx512Bf16>(a); }

}  // namespace lstmlm::kernels::bf16
