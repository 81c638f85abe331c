// What the CPU this process runs on can execute, and the ceiling LSTMLM_ISA puts on it. The low-precision
// backends pick their kernels from this at run time (their ISA-specific functions carry target
// attributes, so one binary holds them all and only calls what the CPU has).
#pragma once
#include <string_view>

#include "lstmlm/precision.hpp"

namespace lstmlm::kernels {

// The kernel levels, lowest first, numbered alike on every architecture (the registry walks down from
// LSTMLM_ISA's ceiling). x86-64: Avx2 (AVX2 and FMA), Avx512, Dot (the AVX-512 dot-product instructions:
// AVX512-BF16 for bf16, AVX512-VNNI for int8), Amx. aarch64: Neon (Advanced SIMD: fp32 FMAs, bf16 on fp32
// FMAs, int8 on widening multiplies), Dot (the dot-product extension: int8 on SDOT), I8mm (int8 on SMMLA);
// level 2 has no aarch64 kernels. WebAssembly: Simd128 (fp32 on SIMD128, a multiply then an add: a bit set of
// its own, docs/web.md). A build compiles only its own architecture's kernels.
enum class Isa {
  Scalar = 0,
  Avx2 = 1,
  Avx512 = 2,
  Dot = 3,
  Amx = 4,
  Neon = Avx2,
  I8mm = Amx,
  Simd128 = Avx2
};

struct CpuFeatures {
  bool avx2_fma = false;
  bool avx512 = false;  // F, BW, DQ, VL
  bool avx512_bf16 = false;
  bool avx512_vnni = false;
  bool avx_vnni = false;  // the VEX vpdpbusd on 256 bits (int8's AVX2 level uses it where present)
  bool amx_bf16 = false;  // AMX-TILE and AMX-BF16, and the kernel lets this process use the tile data
  bool amx_int8 = false;  // AMX-TILE and AMX-INT8, idem
  // aarch64 (getauxval's hardware capabilities):
  bool neon = false;     // ASIMD
  bool dotprod = false;  // ASIMDDP: SDOT
  bool i8mm = false;     // I8MM: SMMLA
  bool bf16 = false;     // BF16 (BFDOT, BFMMLA: no kernel uses them, their rounding is not vdpbf16ps's)
};

// Read once: on x86-64 cpuid, xgetbv and, for AMX, arch_prctl(ARCH_REQ_XCOMP_PERM) (a refused AMX
// permission leaves amx_* false, so the backends fall back instead of faulting); on aarch64
// getauxval(AT_HWCAP) and getauxval(AT_HWCAP2).
const CpuFeatures& cpu_features();

// The highest level LSTMLM_ISA allows: the highest level when unset or empty; throws UsageError naming the
// variable and the values this architecture accepts otherwise (x86-64: amx, avx512bf16, avx512vnni,
// avx512, avxvnni, avx2, scalar; aarch64: i8mm, dotprod, neon, scalar; WebAssembly: simd128, scalar). Read
// on every call, so a test may change it.
Isa isa_ceiling();

// Whether int8's AVX2 level may use AVX-VNNI: the CPU has it and LSTMLM_ISA is not avx2, which caps at what
// the AVX2 CPUs without it (Haswell to Zen 3) run, vpmaddubsw; avxvnni allows it. Read on every call.
bool avx_vnni_allowed();

// "amx", "avx512bf16" / "avx512vnni" (Dot, by precision), "avx512", "avx2" ("avxvnni" for int8 where
// avx_vnni_allowed()), "scalar"; on aarch64 "i8mm", "dotprod", "neon", "scalar"; on WebAssembly "simd128",
// "scalar".
std::string_view isa_name(Isa isa, Precision precision);

}  // namespace lstmlm::kernels
