// Which backend serves a precision. fp32 is compiled for the build's ISA (simd.hpp); bf16 and int8 carry
// a kernel per ISA and take the best the CPU has, at most LSTMLM_ISA. A new precision or ISA adds its
// backend here.
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

bool has(std::string_view precision, Isa isa) {
  const CpuFeatures& f = cpu_features();
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
  if (precision == "fp32") return nullptr;
  if (!has(precision, isa)) return nullptr;
  return &lowp_backend(precision, isa);
}

const Backend& backend(std::string_view precision) {
  if (precision == "fp32") return fp32::native_backend();
  if (precision == "bf16" || precision == "int8") {
    for (int level = static_cast<int>(isa_ceiling()); level >= 0; --level)
      if (const Backend* b = backend_at(precision, static_cast<Isa>(level))) return *b;
  }
  throw UsageError("precision '" + std::string(precision) + "' is not available (use fp32, bf16 or int8)");
}

}  // namespace lstmlm::kernels
