// fp32 at each kernel level: the same layers over the kernels of avx512.cpp, avx2.cpp or scalar.cpp (neon.cpp
// or scalar.cpp on aarch64, wasm.cpp or scalar.cpp on WebAssembly).
#include "kernels/fp32/backend.hpp"

#include <stdexcept>
#include <string>

#include "kernels/fp32/layers.hpp"

namespace lstmlm::kernels::fp32 {

namespace {

class Fp32Backend final : public Backend {
 public:
  explicit Fp32Backend(const Kernels& k) : k_(k), name_(std::string("fp32/") + k.isa) {}
  std::string_view name() const override { return name_; }
  std::unique_ptr<RecurrentLayer> lstm(const LstmWeights& w) const override { return make_lstm(w, k_); }
  std::unique_ptr<OutputLayer> linear(const Rows& w, int rows, int cols, const float* bias) const override {
    return make_linear(w, rows, cols, bias, k_);
  }

 private:
  const Kernels& k_;
  std::string name_;
};

}  // namespace

const Backend& backend_at(Isa isa) {
  switch (isa) {
#if defined(__aarch64__)
    case Isa::Neon: {
      static const Fp32Backend b(fp32_neon::kernels());
      return b;
    }
#elif defined(__x86_64__)
    case Isa::Avx512: {
      static const Fp32Backend b(fp32_avx512::kernels());
      return b;
    }
    case Isa::Avx2: {
      static const Fp32Backend b(fp32_avx2::kernels());
      return b;
    }
#elif defined(__wasm_simd128__)
    case Isa::Simd128: {
      static const Fp32Backend b(fp32_wasm::kernels());
      return b;
    }
#endif
    case Isa::Scalar: {
      static const Fp32Backend b(fp32_scalar::kernels());
      return b;
    }
    default:
      throw std::logic_error("fp32 has no kernels at this level");
  }
}

}  // namespace lstmlm::kernels::fp32
