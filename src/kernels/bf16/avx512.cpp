// The bf16 kernel on AVX-512F without BF16: vdpbf16ps's bits from fp32 FMAs. Compiled with AVX-512 (F, BW,
// DQ, VL) (CMakeLists.txt); called only where the CPU has them.
#include <immintrin.h>

#include "kernels/bf16/tiles.hpp"

namespace lstmlm::kernels::bf16 {

namespace {

// The pair's odd product, then its even one, into the accumulator: vdpbf16ps's order.
struct Avx512Fma {
  static constexpr int kR = 4, kNB = 3, kR2 = kR, kNB2 = kNB, kNB1 = 6;
  using V = __m512;
  struct W {
    __m512 even, odd;
  };
  struct X {
    __m512 even, odd;
  };
  static V init(const float* p) { return p ? _mm512_loadu_ps(p) : _mm512_setzero_ps(); }
  static W weights(const uint16_t* p) {
    const __m512i v = _mm512_loadu_si512(p);
    // The all-lanes masked shift is vpslld itself, without the _mm512_undefined_epi32() that GCC 12 reports
    // as uninitialized (bug 105593) where the build's own target lacks AVX-512.
    return {_mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, v, 16)),
            _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))))};
  }
  static X pair(uint32_t x) {
    return {_mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(x << 16))),
            _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(x & 0xffff0000u)))};
  }
  static V step(V acc, X x, W w) {
    return _mm512_fmadd_ps(x.even, w.even, _mm512_fmadd_ps(x.odd, w.odd, acc));
  }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
};

}  // namespace

void fma_avx512(const Args& a) { run<Avx512Fma>(a); }

}  // namespace lstmlm::kernels::bf16
