// Which backend serves a precision. Every precision carries kernels for several ISAs in one binary and
// takes the best the CPU has, at most LSTMLM_ISA: fp32 at AVX-512, AVX2 or scalar (fp32/kernels.hpp),
// bf16 and int8 up to AMX; on aarch64 fp32 and bf16 at NEON or scalar, int8 up to I8MM; on WebAssembly fp32
// and int8 at SIMD128 or scalar, bf16 scalar. A new precision or
// ISA adds its backend here.
#include <array>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/backend.hpp"
#include "kernels/cells/updates.hpp"
#include "kernels/cpu.hpp"
#include "kernels/fp32/backend.hpp"
#include "kernels/lowp/gemm.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::kernels {

namespace {

constexpr int kLevels = 5;

#if defined(__aarch64__)
bool has(Precision precision, Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::I8mm:
      return precision == Precision::Int8 && f.i8mm;
    case Isa::Dot:
      return precision == Precision::Int8 && f.dotprod;
    case Isa::Neon:
      return f.neon;  // fp32, bf16 on fp32 FMAs, int8 on widening multiplies
    case Isa::Scalar:
      return true;
    default:
      return false;
  }
}
#elif defined(__x86_64__)
bool has(Precision precision, Isa isa) {
  const CpuFeatures& f = cpu_features();
  if (precision == Precision::Fp32) {
    // fp32 has no dot-product or tile kernels: above AVX-512 it runs AVX-512.
    if (isa == Isa::Avx512) return f.avx512;
    if (isa == Isa::Avx2) return f.avx2_fma;
    return isa == Isa::Scalar;
  }
  switch (isa) {
    case Isa::Amx:
      return precision == Precision::Int8 ? f.amx_int8 : f.amx_bf16;
    case Isa::Dot:
      return precision == Precision::Int8 ? f.avx512_vnni : f.avx512_bf16;
    case Isa::Avx512:
      return precision == Precision::Bf16 &&
             f.avx512;  // int8 has no AVX-512 kernel without VNNI: it runs AVX2
    case Isa::Avx2:
      return f.avx2_fma;
    default:
      return true;
  }
}
#elif defined(__wasm_simd128__)
// fp32 and int8 on SIMD128; bf16 has plain code only.
bool has(Precision precision, Isa isa) {
  return isa == Isa::Scalar || (isa == Isa::Simd128 && precision != Precision::Bf16);
}
#else
bool has(Precision, Isa isa) { return isa == Isa::Scalar; }
#endif

// int8's AVX2 level is two backends, with and without AVX-VNNI (LSTMLM_ISA=avx2, or a CPU without it, asks
// for the latter): the last slot holds the one without.
const Backend& lowp_backend(Precision precision, Isa isa) {
  static std::mutex mu;
  static std::array<std::unique_ptr<Backend>, kLevels + 1> bf16, int8;
  const std::lock_guard<std::mutex> lock(mu);
  const bool vnni = avx_vnni_allowed();
  const bool without = precision == Precision::Int8 && isa == Isa::Avx2 && !vnni;
  auto& slot =
      (precision == Precision::Int8 ? int8 : bf16)[without ? size_t{kLevels} : static_cast<size_t>(isa)];
  if (!slot) slot = lowp::make_backend(precision, isa, vnni);
  return *slot;
}

}  // namespace

const Backend* backend_at(Precision precision, Isa isa) {
  if (!has(precision, isa)) return nullptr;
  if (precision == Precision::Fp32) return &fp32::backend_at(isa);
  return &lowp_backend(precision, isa);
}

namespace {

Isa best_level(Precision precision) {
  for (int level = static_cast<int>(isa_ceiling()); level > 0; --level)
    if (has(precision, static_cast<Isa>(level))) return static_cast<Isa>(level);
  return Isa::Scalar;  // every precision has a scalar kernel, which every CPU runs
}

}  // namespace

std::string refusal(Precision precision) {
#if defined(__aarch64__)
  // No aarch64 instruction gives vdpbf16ps's bits (BFDOT and BFMMLA round differently): bf16 runs on fp32
  // FMAs there, as on an x86 CPU without AVX-512.
  if (precision != Precision::Bf16 || best_level(precision) != Isa::Neon) return {};
  return "--precision bf16: on aarch64 bf16 runs on fp32 FMAs (NEON) at about half fp32's speed: use fp32, "
         "or int8 for a faster low precision";
#else
  if (precision != Precision::Bf16 || best_level(precision) != Isa::Avx2) return {};
  return "--precision bf16: this CPU has no AVX-512 (or LSTMLM_ISA caps it at avx2), where bf16 runs on "
         "fp32 FMAs at about half fp32's speed: use fp32, or int8 for a faster low precision";
#endif
}

const Backend& backend(Precision precision) {
  if (std::string why = refusal(precision); !why.empty()) throw UsageError(why);
  const Backend* b = backend_at(precision, best_level(precision));
  if (!b) throw std::logic_error("kernels: no backend for " + std::string(precision_name(precision)));
  return *b;
}

const cells::Updates& cells::updates() {
  // The level fp32 runs at: the generic cells' updates go with their GEMMs' fp32 results.
  for (int level = static_cast<int>(isa_ceiling()); level >= 0; --level) {
    const Isa isa = static_cast<Isa>(level);
    if (!has(Precision::Fp32, isa)) continue;
#if defined(__aarch64__)
    if (isa == Isa::Neon) return cells_neon::updates();
#elif defined(__x86_64__)
    if (isa == Isa::Avx512) return cells_avx512::updates();
    if (isa == Isa::Avx2) return cells_avx2::updates();
#elif defined(__wasm_simd128__)
    if (isa == Isa::Simd128) return cells_wasm::updates();
#endif
  }
  return cells_scalar::updates();
}

}  // namespace lstmlm::kernels
