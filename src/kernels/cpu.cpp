#include "kernels/cpu.hpp"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::kernels {

namespace {

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

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

Isa isa_ceiling() {
  const char* v = std::getenv("LSTMLM_ISA");
  if (!v || !*v) return Isa::Amx;
  const std::string s(v);
  if (s == "amx") return Isa::Amx;
  if (s == "avx512bf16" || s == "avx512vnni") return Isa::Dot;
  if (s == "avx512") return Isa::Avx512;
  if (s == "avx2" || s == "avxvnni") return Isa::Avx2;
  if (s == "scalar") return Isa::Scalar;
  throw UsageError(
      "LSTMLM_ISA='" + printable(s, 64) +
      "' is not a kernel level (use amx, avx512bf16, avx512vnni, avx512, avxvnni, avx2 or scalar; unset "
      "for the best this CPU has)");
}

bool avx_vnni_allowed() {
  const char* v = std::getenv("LSTMLM_ISA");
  return cpu_features().avx_vnni && !(v && std::string_view(v) == "avx2");
}

std::string_view isa_name(Isa isa, Precision precision) {
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
}

}  // namespace lstmlm::kernels
