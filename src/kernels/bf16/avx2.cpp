// The bf16 kernel on AVX2: vdpbf16ps's bits from fp32 FMAs. Compiled with -mavx2 -mfma (CMakeLists.txt);
// called only where the CPU has them.
#include <immintrin.h>

#include "kernels/bf16/tiles.hpp"

namespace lstmlm::kernels::bf16 {

namespace {

// 16 columns as two halves of 8; a weight vector's 64 bytes as two loads.
struct Avx2Fma {
  static constexpr int kR = 2, kNB = 2, kR2 = kR, kNB2 = kNB, kNB1 = 4;
  struct V {
    __m256 lo, hi;
  };
  struct W {
    __m256 even_lo, odd_lo, even_hi, odd_hi;
  };
  struct X {
    __m256 even, odd;
  };
  static V init(const float* p) {
    if (!p) return {_mm256_setzero_ps(), _mm256_setzero_ps()};
    return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
  }
  static W weights(const uint16_t* p) {
    const __m256i mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
    return {_mm256_castsi256_ps(_mm256_slli_epi32(lo, 16)), _mm256_castsi256_ps(_mm256_and_si256(lo, mask)),
            _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16)), _mm256_castsi256_ps(_mm256_and_si256(hi, mask))};
  }
  static X pair(uint32_t x) {
    return {_mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(x << 16))),
            _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(x & 0xffff0000u)))};
  }
  static V step(V acc, X x, W w) {
    return {_mm256_fmadd_ps(x.even, w.even_lo, _mm256_fmadd_ps(x.odd, w.odd_lo, acc.lo)),
            _mm256_fmadd_ps(x.even, w.even_hi, _mm256_fmadd_ps(x.odd, w.odd_hi, acc.hi))};
  }
  static void store(float* p, V v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
};

}  // namespace

void fma_avx2(const Args& a) { run<Avx2Fma>(a); }

}  // namespace lstmlm::kernels::bf16
