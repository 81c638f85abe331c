// What the CPU this process runs on can execute, and the ceiling LSTMLM_ISA puts on it. The low-precision
// backends pick their kernels from this at run time (their ISA-specific functions carry target
// attributes, so one binary holds them all and only calls what the CPU has).
#pragma once
#include <string_view>

#include "lstmlm/precision.hpp"

namespace lstmlm::kernels {

// The kernel levels, lowest first. Dot is the level of AVX-512 dot-product instructions: AVX512-BF16 for
// bf16, AVX512-VNNI for int8.
enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2, Dot = 3, Amx = 4 };

struct CpuFeatures {
  bool avx2_fma = false;
  bool avx512 = false;  // F, BW, DQ, VL
  bool avx512_bf16 = false;
  bool avx512_vnni = false;
  bool avx_vnni = false;  // the VEX vpdpbusd on 256 bits (int8's AVX2 level uses it where present)
  bool amx_bf16 = false;  // AMX-TILE and AMX-BF16, and the kernel lets this process use the tile data
  bool amx_int8 = false;  // AMX-TILE and AMX-INT8, idem
};

// Read once (cpuid, xgetbv and, for AMX, arch_prctl(ARCH_REQ_XCOMP_PERM)); a refused AMX permission
// leaves amx_* false, so the backends fall back instead of faulting.
const CpuFeatures& cpu_features();

// The highest level LSTMLM_ISA allows: Isa::Amx when unset or empty; throws UsageError naming the
// variable and the accepted values otherwise. Read on every call, so a test may change it.
Isa isa_ceiling();

// Whether int8's AVX2 level may use AVX-VNNI: the CPU has it and LSTMLM_ISA is not avx2, which caps at what
// the AVX2 CPUs without it (Haswell to Zen 3) run, vpmaddubsw; avxvnni allows it. Read on every call.
bool avx_vnni_allowed();

// "amx", "avx512bf16" / "avx512vnni" (Dot, by precision), "avx512", "avx2" ("avxvnni" for int8 where
// avx_vnni_allowed()), "scalar".
std::string_view isa_name(Isa isa, Precision precision);

}  // namespace lstmlm::kernels
