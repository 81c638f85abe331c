// The bf16 backend's layout and kernels, private to src/kernels/bf16. The kernels live in one file per ISA,
// each compiled with that ISA's flags (CMakeLists.txt) and called only where the registry found the ISA;
// this header, the only one they include besides the intrinsics, has no out-of-line code.
//
// W [N, K] is stored in blocks of 16 output columns; block j holds, for every pair of inputs k = 2p, 2p+1,
// the 16 columns' two bf16 values side by side: [blocks][Kp / 2][16][2], Kp = K rounded up (zero padded; see
// kDepthAlign). That is at once the operand of AVX512-BF16's vdpbf16ps (one 64-byte vector per pair) and an
// AMX-BF16 B tile (16 pairs x 64 bytes per 32 inputs). Input rows are rounded to bf16 once per call into
// [rows rounded up to 16][Kp].
//
// Every level below AMX gives the same bits: vdpbf16ps adds the odd product then the even one to the fp32
// accumulator, each product exact (two 8-bit significands), each sum rounded to nearest even; the Avx512,
// Avx2, NEON and scalar levels do exactly that with fp32 FMAs (aarch64's BFDOT and BFMMLA round otherwise).
// Values that would be bf16 denormals are flushed to zero when rounded (vdpbf16ps treats them as zero). AMX
// accumulates inside its tiles in its own order, so bf16/amx has bits of its own (within a level, the
// contract of backend.hpp holds everywhere).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/lowp/cols.hpp"

namespace lstmlm::kernels::bf16 {

// Kp: K rounded up to a whole AMX tile row (32 inputs) for AMX, to a pair elsewhere (the zero pairs add
// nothing but time: a third of SEED's K 100 at 32).
inline constexpr int kDepthAlignAmx = 32, kDepthAlign = 2;
#if defined(__x86_64__)
inline constexpr bool kHasAmx = true;
#else
inline constexpr bool kHasAmx = false;
#endif

struct Args {
  int rows = 0, kp = 0;
  const uint16_t* x = nullptr;  // [rows rounded up to 16][kp]
  const uint16_t* w = nullptr;  // [blocks][kp / 2][16][2]
  const float* const* init = nullptr;
  float* const* out = nullptr;
  const lowp::Cols* cols = nullptr;
  int n = 0;
  const uint16_t* block(int j) const { return w + static_cast<size_t>(j) * static_cast<size_t>(kp) * 16; }
};

void dot_amx(const Args& a);     // AMX-BF16
void dot_avx512(const Args& a);  // AVX512-BF16 vdpbf16ps
void fma_avx512(const Args& a);  // AVX-512F FMAs, vdpbf16ps's bits
void fma_avx2(const Args& a);    // AVX2 FMAs, idem
void fma_neon(const Args& a);    // aarch64 NEON FMAs, idem
void fma_scalar(const Args& a);  // std::fma, idem

}  // namespace lstmlm::kernels::bf16
