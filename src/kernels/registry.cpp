// Which backend serves a precision. Every precision carries kernels for several ISAs in one binary and
// takes the best the CPU has, at most LSTMLM_ISA: fp32 at AVX-512, AVX2 or scalar (fp32/kernels.hpp),
// bf16 and int8 up to AMX. A new precision or ISA adds its backend here.
#include <array>
#include <memory>
#include <mutex>
#include <string>

#include "kernels/backend.hpp"
#include "kernels/cpu.hpp"
#include "kernels/fp32/backend.hpp"
#include "kernels/lowp/gemm.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::kernels {

namespace {

constexpr int kLevels = 5;

bool known(std::string_view precision) {
  return precision == "fp32" || precision == "bf16" || precision == "int8";
}

bool has(std::string_view precision, Isa isa) {
  const CpuFeatures& f = cpu_features();
  if (precision == "fp32") {
    // fp32 has no dot-product or tile kernels: above AVX-512 it runs AVX-512.
    if (isa == Isa::Avx512) return f.avx512;
    if (isa == Isa::Avx2) return f.avx2_fma;
    return isa == Isa::Scalar;
  }
  switch (isa) {
    case Isa::Amx:
      return precision == "int8" ? f.amx_int8 : f.amx_bf16;
    case Isa::Dot:
      return precision == "int8" ? f.avx512_vnni : f.avx512_bf16;
    case Isa::Avx512:
      return precision == "bf16" && f.avx512;  // int8 has no AVX-512 kernel without VNNI: it runs AVX2
    case Isa::Avx2:
      return f.avx2_fma;
    default:
      return true;
  }
}

const Backend& lowp_backend(std::string_view precision, Isa isa) {
  static std::mutex mu;
  static std::array<std::unique_ptr<Backend>, kLevels> bf16, int8;
  const std::lock_guard<std::mutex> lock(mu);
  auto& slot = (precision == "int8" ? int8 : bf16)[static_cast<size_t>(isa)];
  if (!slot) slot = lowp::make_backend(precision, isa);
  return *slot;
}

}  // namespace

const Backend* backend_at(std::string_view precision, Isa isa) {
  if (!known(precision)) return nullptr;
  if (!has(precision, isa)) return nullptr;
  if (precision == "fp32") return &fp32::backend_at(isa);
  return &lowp_backend(precision, isa);
}

const Backend& backend(std::string_view precision) {
  if (known(precision)) {
    for (int level = static_cast<int>(isa_ceiling()); level >= 0; --level)
      if (const Backend* b = backend_at(precision, static_cast<Isa>(level))) return *b;
  }
  throw UsageError("precision '" + std::string(precision) + "' is not available (use fp32, bf16 or int8)");
}

}  // namespace lstmlm::kernels
