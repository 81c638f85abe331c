// The bf16 kernel on aarch64's NEON: vdpbf16ps's bits from fp32 FMAs (fmla), as on AVX2. Called only where
// the CPU has Advanced SIMD.
#include <arm_neon.h>

#include "kernels/bf16/tiles.hpp"

namespace lstmlm::kernels::bf16 {

namespace {

// 16 columns as four quarters of 4; a weight vector's 64 bytes as four loads, each lane one column's pair
// (the even input's bf16 in the low half).
struct NeonFma {
  static constexpr int kR = 2, kNB = 2, kR2 = kR, kNB2 = kNB, kNB1 = 4;
  struct V {
    float32x4_t v[4];
  };
  struct W {
    float32x4_t even[4], odd[4];
  };
  struct X {
    float32x4_t even, odd;
  };
  static V init(const float* p) {
    V r;
    for (int q = 0; q < 4; ++q) r.v[q] = p ? vld1q_f32(p + 4 * q) : vdupq_n_f32(0.0f);
    return r;
  }
  static W weights(const uint16_t* p) {
    W w;
    for (int q = 0; q < 4; ++q) {
      const uint32x4_t u = vld1q_u32(reinterpret_cast<const uint32_t*>(p) + 4 * q);
      w.even[q] = vreinterpretq_f32_u32(vshlq_n_u32(u, 16));
      w.odd[q] = vreinterpretq_f32_u32(vandq_u32(u, vdupq_n_u32(0xffff0000u)));
    }
    return w;
  }
  static X pair(uint32_t x) {
    return {vreinterpretq_f32_u32(vdupq_n_u32(x << 16)), vreinterpretq_f32_u32(vdupq_n_u32(x & 0xffff0000u))};
  }
  // The odd product first, then the even one, each fused: vdpbf16ps's order.
  static V step(V acc, X x, W w) {
    for (int q = 0; q < 4; ++q) acc.v[q] = vfmaq_f32(vfmaq_f32(acc.v[q], x.odd, w.odd[q]), x.even, w.even[q]);
    return acc;
  }
  static void store(float* p, V v) {
    for (int q = 0; q < 4; ++q) vst1q_f32(p + 4 * q, v.v[q]);
  }
};

}  // namespace

void fma_neon(const Args& a) { run<NeonFma>(a); }

}  // namespace lstmlm::kernels::bf16
