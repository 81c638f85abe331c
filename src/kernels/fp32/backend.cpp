// fp32 on the ISA this file is compiled for (simd.hpp picks AVX-512, AVX2+FMA or scalar code).
#include "kernels/fp32/backend.hpp"

#include <string>

#include "kernels/fp32/layers.hpp"
#include "kernels/simd.hpp"

namespace lstmlm::kernels::fp32 {

namespace {

class Fp32Backend final : public Backend {
 public:
  std::string_view name() const override { return name_; }
  std::unique_ptr<RecurrentLayer> lstm(const LstmWeights& w) const override { return make_lstm(w); }
  std::unique_ptr<OutputLayer> linear(const float* w, int rows, int cols, const float* bias) const override {
    return make_linear(w, rows, cols, bias);
  }

 private:
  std::string name_ = std::string("fp32/") + simd::kIsa;
};

}  // namespace

const Backend& native_backend() {
  static const Fp32Backend b;
  return b;
}

}  // namespace lstmlm::kernels::fp32
