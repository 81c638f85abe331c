#include "kernels/cpu.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::kernels {

namespace {

// A value of LSTMLM_ISA and the level it caps at (kLevelNames below: this architecture's, highest first).
struct Level {
  std::string_view name;
  Isa isa;
};

#if defined(__x86_64__)
bool bit(unsigned reg, int b) { return (reg >> b) & 1u; }

// Linux's opt-in for AMX state (arch/x86/include/uapi/asm/prctl.h): without it the first tile
// instruction faults.
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = bit(c, 27), fma = bit(c, 12);
  if (!osxsave) return f;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const uint64_t xcr0 = (uint64_t{hi} << 32) | lo;
  const bool os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = (xcr0 & 0xe6) == 0xe6;
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const unsigned b7 = b, c7 = c, d7 = d;
  unsigned a71 = 0, b71, c71, d71;
  __get_cpuid_count(7, 1, &a71, &b71, &c71, &d71);
  f.avx2_fma = os_avx && fma && bit(b7, 5);
  f.avx512 = f.avx2_fma && os_avx512 && bit(b7, 16) && bit(b7, 17) && bit(b7, 30) && bit(b7, 31);
  f.avx512_bf16 = f.avx512 && bit(a71, 5);
  f.avx512_vnni = f.avx512 && bit(c7, 11);
  f.avx_vnni = f.avx2_fma && bit(a71, 4);
  const bool tile = f.avx512 && os_amx && bit(d7, 24);
  if (tile && syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0) {
    f.amx_bf16 = bit(d7, 22);
    f.amx_int8 = bit(d7, 25);
  }
  return f;
}

constexpr Level kLevelNames[] = {{"amx", Isa::Amx},       {"avx512bf16", Isa::Dot}, {"avx512vnni", Isa::Dot},
                                 {"avx512", Isa::Avx512}, {"avxvnni", Isa::Avx2},   {"avx2", Isa::Avx2},
                                 {"scalar", Isa::Scalar}};

#elif defined(__aarch64__)
// Linux's hardware capabilities (arch/arm64/include/uapi/asm/hwcap.h).
constexpr unsigned long kHwcapAsimd = 1ul << 1, kHwcapAsimddp = 1ul << 20;
constexpr unsigned long kHwcap2I8mm = 1ul << 13, kHwcap2Bf16 = 1ul << 14;

CpuFeatures detect() {
  CpuFeatures f;
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.neon = (hw & kHwcapAsimd) != 0;
  f.dotprod = f.neon && (hw & kHwcapAsimddp) != 0;
  f.i8mm = f.neon && (hw2 & kHwcap2I8mm) != 0;
  f.bf16 = f.neon && (hw2 & kHwcap2Bf16) != 0;
  return f;
}

constexpr Level kLevelNames[] = {
    {"i8mm", Isa::I8mm}, {"dotprod", Isa::Dot}, {"neon", Isa::Neon}, {"scalar", Isa::Scalar}};

#elif defined(__wasm_simd128__)
// A WebAssembly module with SIMD128 runs only where the engine has it: nothing to detect.
CpuFeatures detect() { return {}; }

constexpr Level kLevelNames[] = {{"simd128", Isa::Simd128}, {"scalar", Isa::Scalar}};

#else
// Another architecture: the scalar kernels only.
CpuFeatures detect() { return {}; }

constexpr Level kLevelNames[] = {{"scalar", Isa::Scalar}};
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

Isa isa_ceiling() {
  const char* v = std::getenv("LSTMLM_ISA");
  if (!v || !*v) return kLevelNames[0].isa;
  const std::string s(v);
  std::string names;
  const size_t n = std::size(kLevelNames);
  for (size_t i = 0; i < n; ++i) {
    if (s == kLevelNames[i].name) return kLevelNames[i].isa;
    names += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::string(kLevelNames[i].name);
  }
  throw UsageError("LSTMLM_ISA='" + printable(s, 64) + "' is not a kernel level (use " + names +
                   "; unset for the best this CPU has)");
}

bool avx_vnni_allowed() {
  const char* v = std::getenv("LSTMLM_ISA");
  return cpu_features().avx_vnni && !(v && std::string_view(v) == "avx2");
}

std::string_view isa_name(Isa isa, [[maybe_unused]] Precision precision) {
#if defined(__aarch64__)
  switch (isa) {
    case Isa::I8mm:
      return "i8mm";
    case Isa::Dot:
      return "dotprod";
    case Isa::Neon:
      return "neon";
    default:
      return "scalar";
  }
#elif defined(__wasm__)
  return isa == Isa::Simd128 ? "simd128" : "scalar";
#else
  switch (isa) {
    case Isa::Amx:
      return "amx";
    case Isa::Dot:
      return precision == Precision::Int8 ? "avx512vnni" : "avx512bf16";
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx2:
      return precision == Precision::Int8 && avx_vnni_allowed() ? "avxvnni" : "avx2";
    default:
      return "scalar";
  }
#endif
}

}  // namespace lstmlm::kernels
