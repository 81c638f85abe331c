// A 16-lane float vector with the few operations the kernels need, chosen at compile time:
// AVX-512 (one zmm), AVX2+FMA (two ymm), NEON on aarch64 (four q registers), WebAssembly SIMD128 (four
// v128) or plain scalar code. Every operation is lane-wise and exactly specified (fma rounds once), so a
// lane's result never depends on its neighbours: this is what makes the kernels batch-invariant.
// Horizontal reductions go through memory in a fixed lane order for the same reason. SIMD128 has no fused
// multiply-add: there fma is a multiply then an add, each rounded (the WebAssembly bit set, docs/web.md).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__wasm__)
#include "kernels/fma.hpp"  // one WebAssembly variant: no other ISA's copy to keep apart
#endif

#if defined(__AVX512F__)
#include <immintrin.h>
#define LSTMLM_SIMD_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define LSTMLM_SIMD_AVX2 1
#elif defined(__aarch64__) && defined(__ARM_NEON) && !defined(LSTMLM_SIMD_SCALAR)
// The scalar variant files define LSTMLM_SIMD_SCALAR (CMakeLists.txt): NEON is part of the aarch64
// baseline, so no compiler flag turns it off there.
#include <arm_neon.h>
#define LSTMLM_SIMD_NEON 1
#elif defined(__wasm_simd128__) && defined(LSTMLM_SIMD_WASM)
// Only the WebAssembly variant files define LSTMLM_SIMD_WASM (web/wasm.cmake): every other file of that
// build keeps the plain code with the fma rounded once, the native bits.
#include <wasm_simd128.h>
#define LSTMLM_SIMD_WASM128 1
#endif

// Each copy of the kernels compiled for another ISA (kernels/fp32/{avx512,avx2,scalar}.cpp) names its
// variant first: V16 has a different layout per ISA, and an inline function compiled with AVX-512 must
// never be the one the linker keeps for code that runs on an AVX2 CPU. The inline namespace gives every
// variant its own symbols; code outside those files gets "build", the build's own target.
#ifndef LSTMLM_KERNEL_VARIANT
#define LSTMLM_KERNEL_VARIANT build
#endif

namespace lstmlm::kernels::simd {
inline namespace LSTMLM_KERNEL_VARIANT {

inline constexpr int kLanes = 16;
// exp (below): 1.5 * 2^23, whose float spacing is 1, so that s = kShifter + y rounds y to an integer k and
// holds it in its low mantissa bits; and the mask of the exponent field, where floor(k / 16) goes.
inline constexpr float kShifter = 12582912.0f;
inline constexpr int32_t kExpBits = static_cast<int32_t>(0xFF800000u);

#if defined(LSTMLM_SIMD_AVX512)
inline constexpr const char* kIsa = "avx512";
struct V16 {
  __m512 v;
};
inline V16 load(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void store(float* p, V16 a) { _mm512_storeu_ps(p, a.v); }
inline V16 set1(float x) { return {_mm512_set1_ps(x)}; }
// Pins a value in a register: stops GCC from folding a reused weight load into every fma as a memory
// operand (which turns 4 loads per k into 4 x rows loads and makes the GEMM load-bound).
inline void pin(V16& a) { __asm__("" : "+v"(a.v)); }
inline V16 fma(V16 a, V16 b, V16 c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline V16 operator+(V16 a, V16 b) { return {_mm512_add_ps(a.v, b.v)}; }
inline V16 operator-(V16 a, V16 b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline V16 operator*(V16 a, V16 b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline V16 operator/(V16 a, V16 b) { return {_mm512_div_ps(a.v, b.v)}; }
// GCC 12's unmasked forms of these intrinsics pass an uninitialised source and trip -Wuninitialized;
// the all-lanes masked forms are the same instructions without the warning.
constexpr __mmask16 kAll = 0xFFFF;
inline V16 min(V16 a, V16 b) { return {_mm512_mask_min_ps(a.v, kAll, a.v, b.v)}; }
inline V16 max(V16 a, V16 b) { return {_mm512_mask_max_ps(a.v, kAll, a.v, b.v)}; }
// exp's last step (below): with s = kShifter + k, k integral and |k| < 2^22 (so k, two's complement, is
// the low bits of s), t[k mod 16] (1 + p) 2^floor(k / 16). The power of 2 is added to the exponent bits:
// exact while the result is a normal number, as exp's clamp ensures.
inline V16 exp_scale(const float* t, V16 s, V16 p) {
  const __m512i k = _mm512_castps_si512(s.v);
  const __m512 table = _mm512_loadu_ps(t);
  const __m512 tk = _mm512_mask_permutexvar_ps(table, kAll, k, table);  // the index's low 4 bits
  const __m512i e = _mm512_and_si512(_mm512_mask_slli_epi32(k, kAll, k, 19), _mm512_set1_epi32(kExpBits));
  return {_mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(_mm512_fmadd_ps(tk, p.v, tk)), e))};
}
inline V16 abs(V16 a) {
  return {_mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a.v), _mm512_set1_epi32(0x7fffffff)))};
}
// |mag| with the sign of sgn (mag must be non-negative).
inline V16 with_sign_of(V16 mag, V16 sgn) {
  __m512i s = _mm512_and_si512(_mm512_castps_si512(sgn.v), _mm512_set1_epi32(int32_t(0x80000000u)));
  return {_mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(mag.v), s))};
}
// a < b ? x : y, lane-wise.
inline V16 select_lt(V16 a, V16 b, V16 x, V16 y) {
  return {_mm512_mask_blend_ps(_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ), y.v, x.v)};
}
// The first n (0 < n <= 16) floats of p, `fill` in the other lanes; never reads past p[n-1].
inline V16 load_n(const float* p, int n, float fill) {
  return {_mm512_mask_loadu_ps(_mm512_set1_ps(fill), static_cast<__mmask16>((1u << n) - 1u), p)};
}
inline void store_n(float* p, V16 a, int n) {
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), a.v);
}

#elif defined(LSTMLM_SIMD_AVX2)
inline constexpr const char* kIsa = "avx2";
struct V16 {
  __m256 lo, hi;
};
inline V16 load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline void store(float* p, V16 a) {
  _mm256_storeu_ps(p, a.lo);
  _mm256_storeu_ps(p + 8, a.hi);
}
inline V16 set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
inline void pin(V16& a) { __asm__("" : "+x"(a.lo), "+x"(a.hi)); }
inline V16 fma(V16 a, V16 b, V16 c) {
  return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
#define LSTMLM_AVX2_BIN(op, fn) \
  inline V16 op(V16 a, V16 b) { return {fn(a.lo, b.lo), fn(a.hi, b.hi)}; }
LSTMLM_AVX2_BIN(operator+, _mm256_add_ps)
LSTMLM_AVX2_BIN(operator-, _mm256_sub_ps)
LSTMLM_AVX2_BIN(operator*, _mm256_mul_ps)
LSTMLM_AVX2_BIN(operator/, _mm256_div_ps)
LSTMLM_AVX2_BIN(min, _mm256_min_ps)
LSTMLM_AVX2_BIN(max, _mm256_max_ps)
#undef LSTMLM_AVX2_BIN
inline __m256 exp_scale8(const float* t, __m256 s, __m256 p) {
  const __m256i k = _mm256_castps_si256(s);
  // 16 entries from two 8-entry permutes (the index's low 3 bits), bit 3 choosing between them.
  const __m256 tk = _mm256_blendv_ps(_mm256_permutevar8x32_ps(_mm256_loadu_ps(t), k),
                                     _mm256_permutevar8x32_ps(_mm256_loadu_ps(t + 8), k),
                                     _mm256_castsi256_ps(_mm256_slli_epi32(k, 28)));
  const __m256i e = _mm256_and_si256(_mm256_slli_epi32(k, 19), _mm256_set1_epi32(kExpBits));
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(_mm256_fmadd_ps(tk, p, tk)), e));
}
inline V16 exp_scale(const float* t, V16 s, V16 p) {
  return {exp_scale8(t, s.lo, p.lo), exp_scale8(t, s.hi, p.hi)};
}
inline V16 abs(V16 a) {
  __m256 m = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  return {_mm256_and_ps(a.lo, m), _mm256_and_ps(a.hi, m)};
}
inline V16 with_sign_of(V16 mag, V16 sgn) {
  __m256 s = _mm256_castsi256_ps(_mm256_set1_epi32(int32_t(0x80000000u)));
  return {_mm256_or_ps(mag.lo, _mm256_and_ps(sgn.lo, s)), _mm256_or_ps(mag.hi, _mm256_and_ps(sgn.hi, s))};
}
inline V16 select_lt(V16 a, V16 b, V16 x, V16 y) {
  return {_mm256_blendv_ps(y.lo, x.lo, _mm256_cmp_ps(a.lo, b.lo, _CMP_LT_OQ)),
          _mm256_blendv_ps(y.hi, x.hi, _mm256_cmp_ps(a.hi, b.hi, _CMP_LT_OQ))};
}

#elif defined(LSTMLM_SIMD_NEON)
inline constexpr const char* kIsa = "neon";
struct V16 {
  float32x4_t v[4];
};
#define LSTMLM_NEON_LANES(expr)                \
  V16 r;                                       \
  for (int q = 0; q < 4; ++q) r.v[q] = (expr); \
  return r
inline V16 load(const float* p) { LSTMLM_NEON_LANES(vld1q_f32(p + 4 * q)); }
inline void store(float* p, V16 a) {
  for (int q = 0; q < 4; ++q) vst1q_f32(p + 4 * q, a.v[q]);
}
inline V16 set1(float x) { LSTMLM_NEON_LANES(vdupq_n_f32(x)); }
inline void pin(V16& a) { __asm__("" : "+w"(a.v[0]), "+w"(a.v[1]), "+w"(a.v[2]), "+w"(a.v[3])); }
// fmla: a b + c rounded once, the bits of vfmadd.
inline V16 fma(V16 a, V16 b, V16 c) { LSTMLM_NEON_LANES(vfmaq_f32(c.v[q], a.v[q], b.v[q])); }
inline V16 operator+(V16 a, V16 b) { LSTMLM_NEON_LANES(vaddq_f32(a.v[q], b.v[q])); }
inline V16 operator-(V16 a, V16 b) { LSTMLM_NEON_LANES(vsubq_f32(a.v[q], b.v[q])); }
inline V16 operator*(V16 a, V16 b) { LSTMLM_NEON_LANES(vmulq_f32(a.v[q], b.v[q])); }
inline V16 operator/(V16 a, V16 b) { LSTMLM_NEON_LANES(vdivq_f32(a.v[q], b.v[q])); }
// Not fmin/fmax, which return the NaN (and order -0 below +0): x86's minps and maxps, b when a and b
// compare equal or either is NaN, as the scalar level spells them, so that every level gives the same bits.
inline V16 min(V16 a, V16 b) { LSTMLM_NEON_LANES(vbslq_f32(vcltq_f32(a.v[q], b.v[q]), a.v[q], b.v[q])); }
inline V16 max(V16 a, V16 b) { LSTMLM_NEON_LANES(vbslq_f32(vcgtq_f32(a.v[q], b.v[q]), a.v[q], b.v[q])); }
// exp's last step (as on AVX-512): t[k mod 16] by a byte table lookup over the 64-byte table (lane byte
// indices 4 (k mod 16) + 0..3), then the power of 2 added to the exponent bits.
inline float32x4_t exp_scale4(const uint8x16x4_t& table, float32x4_t s, float32x4_t p) {
  const uint32x4_t k = vreinterpretq_u32_f32(s);
  const uint32x4_t bytes =
      vaddq_u32(vmulq_n_u32(vandq_u32(k, vdupq_n_u32(15)), 0x04040404u), vdupq_n_u32(0x03020100u));
  const float32x4_t tk = vreinterpretq_f32_u8(vqtbl4q_u8(table, vreinterpretq_u8_u32(bytes)));
  const uint32x4_t e = vandq_u32(vshlq_n_u32(k, 19), vdupq_n_u32(static_cast<uint32_t>(kExpBits)));
  return vreinterpretq_f32_u32(vaddq_u32(vreinterpretq_u32_f32(vfmaq_f32(tk, tk, p)), e));
}
inline V16 exp_scale(const float* t, V16 s, V16 p) {
  const uint8x16x4_t table = vld1q_u8_x4(reinterpret_cast<const uint8_t*>(t));
  LSTMLM_NEON_LANES(exp_scale4(table, s.v[q], p.v[q]));
}
inline V16 abs(V16 a) {
  LSTMLM_NEON_LANES(
      vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(a.v[q]), vdupq_n_u32(0x7fffffffu))));
}
inline V16 with_sign_of(V16 mag, V16 sgn) {
  LSTMLM_NEON_LANES(
      vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(mag.v[q]),
                                      vandq_u32(vreinterpretq_u32_f32(sgn.v[q]), vdupq_n_u32(0x80000000u)))));
}
// fcmgt, like _CMP_LT_OQ, is false when either is NaN.
inline V16 select_lt(V16 a, V16 b, V16 x, V16 y) {
  LSTMLM_NEON_LANES(vbslq_f32(vcltq_f32(a.v[q], b.v[q]), x.v[q], y.v[q]));
}
#undef LSTMLM_NEON_LANES

#elif defined(LSTMLM_SIMD_WASM128)
inline constexpr const char* kIsa = "simd128";
struct V16 {
  v128_t v[4];
};
#define LSTMLM_WASM_LANES(expr)                \
  V16 r;                                       \
  for (int q = 0; q < 4; ++q) r.v[q] = (expr); \
  return r
inline V16 load(const float* p) { LSTMLM_WASM_LANES(wasm_v128_load(p + 4 * q)); }
inline void store(float* p, V16 a) {
  for (int q = 0; q < 4; ++q) wasm_v128_store(p + 4 * q, a.v[q]);
}
inline V16 set1(float x) { LSTMLM_WASM_LANES(wasm_f32x4_splat(x)); }
inline void pin(V16&) {}
// No fused multiply-add in SIMD128 (relaxed SIMD's may or may not fuse, per engine): a b rounded, then
// + c rounded. Still one fixed sequence per lane, so batch and thread invariance hold.
inline V16 fma(V16 a, V16 b, V16 c) {
  LSTMLM_WASM_LANES(wasm_f32x4_add(wasm_f32x4_mul(a.v[q], b.v[q]), c.v[q]));
}
inline V16 operator+(V16 a, V16 b) { LSTMLM_WASM_LANES(wasm_f32x4_add(a.v[q], b.v[q])); }
inline V16 operator-(V16 a, V16 b) { LSTMLM_WASM_LANES(wasm_f32x4_sub(a.v[q], b.v[q])); }
inline V16 operator*(V16 a, V16 b) { LSTMLM_WASM_LANES(wasm_f32x4_mul(a.v[q], b.v[q])); }
inline V16 operator/(V16 a, V16 b) { LSTMLM_WASM_LANES(wasm_f32x4_div(a.v[q], b.v[q])); }
// x86's minps and maxps, as the other levels: pmin(x, y) is y < x ? y : x, so pmin(b, a) is a < b ? a : b.
inline V16 min(V16 a, V16 b) { LSTMLM_WASM_LANES(wasm_f32x4_pmin(b.v[q], a.v[q])); }
inline V16 max(V16 a, V16 b) { LSTMLM_WASM_LANES(wasm_f32x4_pmax(b.v[q], a.v[q])); }
// exp's last step (as on NEON): t[k mod 16] by byte swizzles over the 64-byte table, 16 bytes at a time
// (a swizzle gives 0 for an index out of its 16 bytes, so the four are or-ed), then the power of 2 added
// to the exponent bits.
inline v128_t exp_scale4(const v128_t (&table)[4], v128_t s, v128_t p) {
  const v128_t bytes =
      wasm_i32x4_add(wasm_i32x4_mul(wasm_v128_and(s, wasm_i32x4_splat(15)), wasm_i32x4_splat(0x04040404)),
                     wasm_i32x4_splat(0x03020100));
  v128_t tk = wasm_i8x16_swizzle(table[0], bytes);
  for (int j = 1; j < 4; ++j)
    tk = wasm_v128_or(tk, wasm_i8x16_swizzle(table[j], wasm_i8x16_sub(bytes, wasm_i8x16_splat(16 * j))));
  const v128_t e = wasm_v128_and(wasm_i32x4_shl(s, 19), wasm_i32x4_splat(kExpBits));
  return wasm_i32x4_add(wasm_f32x4_add(wasm_f32x4_mul(tk, p), tk), e);
}
inline V16 exp_scale(const float* t, V16 s, V16 p) {
  const v128_t table[4] = {wasm_v128_load(t), wasm_v128_load(t + 4), wasm_v128_load(t + 8),
                           wasm_v128_load(t + 12)};
  LSTMLM_WASM_LANES(exp_scale4(table, s.v[q], p.v[q]));
}
inline V16 abs(V16 a) { LSTMLM_WASM_LANES(wasm_f32x4_abs(a.v[q])); }
inline V16 with_sign_of(V16 mag, V16 sgn) {
  LSTMLM_WASM_LANES(wasm_v128_or(mag.v[q], wasm_v128_and(sgn.v[q], wasm_i32x4_splat(int32_t(0x80000000u)))));
}
// f32x4.lt, like _CMP_LT_OQ, is false when either is NaN.
inline V16 select_lt(V16 a, V16 b, V16 x, V16 y) {
  LSTMLM_WASM_LANES(wasm_v128_bitselect(x.v[q], y.v[q], wasm_f32x4_lt(a.v[q], b.v[q])));
}
#undef LSTMLM_WASM_LANES

#else
inline constexpr const char* kIsa = "scalar";
struct V16 {
  float v[16];
};
#define LSTMLM_LANES(expr)                      \
  V16 r;                                        \
  for (int l = 0; l < 16; ++l) r.v[l] = (expr); \
  return r
inline V16 load(const float* p) { LSTMLM_LANES(p[l]); }
inline void store(float* p, V16 a) { std::memcpy(p, a.v, sizeof a.v); }
inline V16 set1(float x) { LSTMLM_LANES(x); }
inline void pin(V16&) {}
#if defined(__wasm__)
inline float fma1(float a, float b, float c) { return kernels::fma_rn(a, b, c); }
#else
inline float fma1(float a, float b, float c) { return std::fma(a, b, c); }
#endif
inline V16 fma(V16 a, V16 b, V16 c) { LSTMLM_LANES(fma1(a.v[l], b.v[l], c.v[l])); }
inline V16 operator+(V16 a, V16 b) { LSTMLM_LANES(a.v[l] + b.v[l]); }
inline V16 operator-(V16 a, V16 b) { LSTMLM_LANES(a.v[l] - b.v[l]); }
inline V16 operator*(V16 a, V16 b) { LSTMLM_LANES(a.v[l] * b.v[l]); }
inline V16 operator/(V16 a, V16 b) { LSTMLM_LANES(a.v[l] / b.v[l]); }
// x86's minps and maxps exactly: b when a and b compare equal (+0 and -0) or either is NaN, so that
// relu(-0), a clip of NaN and exp's clamp give the vector levels' bits.
inline V16 min(V16 a, V16 b) { LSTMLM_LANES(a.v[l] < b.v[l] ? a.v[l] : b.v[l]); }
inline V16 max(V16 a, V16 b) { LSTMLM_LANES(a.v[l] > b.v[l] ? a.v[l] : b.v[l]); }
inline V16 exp_scale(const float* t, V16 s, V16 p) {
  V16 r;
  for (int l = 0; l < 16; ++l) {
    uint32_t k, v;
    std::memcpy(&k, &s.v[l], 4);
    const float tk = t[k & 15u];
    const float y = fma1(tk, p.v[l], tk);
    std::memcpy(&v, &y, 4);
    v += (k << 19) & static_cast<uint32_t>(kExpBits);
    std::memcpy(&r.v[l], &v, 4);
  }
  return r;
}
inline V16 abs(V16 a) { LSTMLM_LANES(std::fabs(a.v[l])); }
inline V16 with_sign_of(V16 mag, V16 sgn) { LSTMLM_LANES(std::copysign(mag.v[l], sgn.v[l])); }
inline V16 select_lt(V16 a, V16 b, V16 x, V16 y) { LSTMLM_LANES(a.v[l] < b.v[l] ? x.v[l] : y.v[l]); }
inline V16 load_n(const float* p, int n, float fill) { LSTMLM_LANES(l < n ? p[l] : fill); }
inline void store_n(float* p, V16 a, int n) { std::memcpy(p, a.v, sizeof(float) * static_cast<size_t>(n)); }
#undef LSTMLM_LANES
#endif

#if defined(LSTMLM_SIMD_AVX2) || defined(LSTMLM_SIMD_NEON) || defined(LSTMLM_SIMD_WASM128)
// No masked loads and stores at these levels: a tail goes through a 16-float buffer.
inline V16 load_n(const float* p, int n, float fill) {
  alignas(64) float t[16];
  for (int i = 0; i < 16; ++i) t[i] = i < n ? p[i] : fill;
  return load(t);
}
inline void store_n(float* p, V16 a, int n) {
  alignas(64) float t[16];
  store(t, a);
  std::memcpy(p, t, sizeof(float) * static_cast<size_t>(n));
}
#endif

// Lane sum in a fixed order (0..15), so it does not depend on how the vector was produced.
inline float reduce_add(V16 a) {
  alignas(64) float t[16];
  store(t, a);
  float s = 0.0f;
  for (float x : t) s += x;
  return s;
}
inline float reduce_max(V16 a) {
  alignas(64) float t[16];
  store(t, a);
  float m = t[0];
  for (float x : t) m = x > m ? x : m;
  return m;
}

// 2^(j / 16), j = 0..15, each rounded to the nearest float.
inline constexpr float kExp2Sixteenths[16] = {
    1.000000000e+00f, 1.044273734e+00f, 1.090507746e+00f, 1.138788581e+00f,
    1.189207077e+00f, 1.241857767e+00f, 1.296839595e+00f, 1.354255557e+00f,
    1.414213538e+00f, 1.476826191e+00f, 1.542210817e+00f, 1.610490322e+00f,
    1.681792855e+00f, 1.756252170e+00f, 1.834008098e+00f, 1.915206552e+00f};

// exp(x) = 2^(k / 16) e^r: k = round(16 x / ln2), r = x - k ln2 / 16 (Cody-Waite: ln2 / 16 split in two,
// the first part exact times any k here), so |r| <= ln2 / 32; e^r = 1 + p with p = r + r^2 / 2 + r^3 / 6
// (the next term, r^4 / 24 < 1e-8, is 0.15 ulp); 2^(k / 16) from a 16-entry table and a power of 2.
// Within 2 ulp of exp (kernels_math_test). 7 multiplies and fmas, the rest integer and shuffle work: the
// fused step (5 per unit) and the log-softmax (1 per word) spend most of their non-GEMM time here. The
// input is clamped so that the result stays a normal number (exp(-87.3) ~ 1.2e-38 instead of denormals or
// 0, far below anything a log-softmax can resolve). Every level computes the same bits.
// The clamp bounds: exp_unclamped needs its input within them.
inline constexpr float kExpLow = -87.3f, kExpHigh = 88.37626f;
inline V16 exp_unclamped(V16 x) {
  const V16 s = fma(x, set1(23.0831206542f), set1(kShifter));  // 16 / ln2
  const V16 k = s - set1(kShifter);
  V16 r = fma(k, set1(-0.0433349609375f), x);
  r = fma(k, set1(1.32621525e-5f), r);
  const V16 p = fma(r * r, fma(r, set1(1.0f / 6.0f), set1(0.5f)), r);
  return exp_scale(kExp2Sixteenths, s, p);
}
inline V16 exp(V16 x) { return exp_unclamped(min(max(x, set1(kExpLow)), set1(kExpHigh))); }
// The same values as exp for an input known to be on one side of 0, without the clamp that side cannot
// need: 2 of exp's 16 operations are its clamp, and the log-softmax (x - max <= 0) and tanh (2|x| >= 0)
// spend most of their time in exp.
inline V16 exp_nonpositive(V16 x) { return exp_unclamped(max(x, set1(kExpLow))); }
inline V16 exp_nonnegative(V16 x) { return exp_unclamped(min(x, set1(kExpHigh))); }

inline V16 sigmoid(V16 x) { return set1(1.0f) / (set1(1.0f) + exp(set1(0.0f) - x)); }
// Keras 2: clip(0.2 x + 0.5, 0, 1); Keras 3: clip(x / 6 + 0.5, 0, 1) (x / 6 as a division, like Keras).
inline V16 hard_sigmoid(V16 x) { return min(max(fma(x, set1(0.2f), set1(0.5f)), set1(0.0f)), set1(1.0f)); }
inline V16 hard_sigmoid_keras3(V16 x) {
  return min(max(x / set1(6.0f) + set1(0.5f), set1(0.0f)), set1(1.0f));
}

// tanh(x), Cephes tanhf: odd polynomial for |x| < 0.625 (keeps relative accuracy near 0),
// 1 - 2 / (exp(2|x|) + 1) with x's sign elsewhere.
inline V16 tanh(V16 x) {
  V16 a = abs(x);
  V16 z = x * x;
  V16 p = set1(-5.70498872745e-3f);
  p = fma(p, z, set1(2.06390887954e-2f));
  p = fma(p, z, set1(-5.37397155531e-2f));
  p = fma(p, z, set1(1.33314422036e-1f));
  p = fma(p, z, set1(-3.33332819422e-1f));
  V16 small = fma(p * z, x, x);
  V16 e = exp_nonnegative(a + a);
  V16 big = with_sign_of(set1(1.0f) - set1(2.0f) / (e + set1(1.0f)), x);
  return select_lt(a, set1(0.625f), small, big);
}

}  // namespace LSTMLM_KERNEL_VARIANT
}  // namespace lstmlm::kernels::simd
