// The int8 backend's layout and kernels, private to src/kernels/int8. One file per ISA, each compiled with
// that ISA's flags (CMakeLists.txt) and called only where the registry found it; this header, the only one
// they include besides the intrinsics, has no out-of-line code.
//
// W [N, K]: row n scaled by sw[n] = max|W[n]| / 127 and rounded to int8 in [-127, 127]; blocks of 16
// columns, each holding for every quad of inputs k = 4p..4p+3 the 16 columns' four int8 side by side:
// [blocks][Kp / 4][16][4], Kp = K rounded up (zero padded; see kDepthAlign). That is AVX512-VNNI's vpdpbusd
// operand (one 64-byte vector per quad) and an AMX-INT8 B tile (16 quads x 64 bytes per 64 inputs). Each
// input row is quantized per call the same way with its own scale sx[r] (PyTorch's dynamic quantization, per
// row).
//
// The dot products are exact int32 sums on every ISA, and every kernel turns one into fp32 by the same
// operations, out = fma(float(acc), sx[r] * sw[n], init) (init 0 when absent): int8 gives the same bits
// on AMX, AVX512-VNNI, AVX-VNNI, AVX2, NEON, SDOT, I8MM, WebAssembly SIMD128 and scalar.
//
// A block of 16 rows holding a heavy row (max|w| > 3 rms, gemm.cpp) also has a residual plane in the same
// layout: each of its rows' rounding residual fl(w - q sw), quantized the same way. A second pass of the
// same kernel over those blocks, with init = out, adds it: out = fma(float(acc2), sx[r] * sw2[n], out).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/lowp/cols.hpp"

namespace lstmlm::kernels::int8 {

// Kp: K rounded up to a whole AMX tile row (64 inputs) for AMX, to a quad elsewhere (the zero quads add
// nothing but time: 28% of SEED's K 100 at 64).
inline constexpr int kDepthAlignAmx = 64, kDepthAlign = 4;
// aarch64's SMMLA multiplies 8 inputs of two rows by 8 of two columns: I8MM takes two quads at a time.
inline constexpr int kDepthAlignI8mm = 8;

struct Args {
  int rows = 0, kp = 0;
  // [rows rounded up to 16][kp]; for the vpdpbusd kernels the bytes x + 128 over K (the padding stays 0)
  const int8_t* x = nullptr;
  const float* sx = nullptr;      // [rows]
  const int8_t* w = nullptr;      // [blocks][kp / 4][16][4]
  const float* sw = nullptr;      // [blocks * 16]
  const int32_t* comp = nullptr;  // [blocks * 16]: 128 x the sum of each column's int8 (vpdpbusd's offset)
  const float* const* init = nullptr;
  float* const* out = nullptr;
  const lowp::Cols* cols = nullptr;
  int n = 0;
  const int8_t* block(int j) const { return w + static_cast<size_t>(j) * static_cast<size_t>(kp) * 16; }
};

void dot_amx(const Args& a);      // AMX-INT8 tdpbssd
void dot_vnni(const Args& a);     // AVX512-VNNI vpdpbusd, x offset by 128
void dot_avxvnni(const Args& a);  // AVX-VNNI {vex} vpdpbusd, x offset by 128
void dot_avx2(const Args& a);     // AVX2 vpmaddubsw on |x| and sign-adjusted w (no saturation at 127)
void dot_scalar(const Args& a);   // int32 loops
void dot_neon(const Args& a);     // aarch64 NEON SMULL and SADALP (int16 products, exact)
void dot_sdot(const Args& a);     // aarch64 SDOT (the dot-product extension)
void dot_i8mm(const Args& a);     // aarch64 SMMLA (I8MM), two rows by two columns by eight inputs
void dot_wasm(const Args& a);     // WebAssembly SIMD128 i32x4.dot_i16x8_s on int8 widened to int16

}  // namespace lstmlm::kernels::int8
