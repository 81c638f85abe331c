// The fp32 output layer: logits = bias + W h over packed panels, and the shared log-sum-exp (cell.hpp), both
// from the ISA's variant of kernels.hpp.
#include "kernels/fp32/kernels.hpp"
#include "kernels/fp32/layers.hpp"

namespace lstmlm::kernels::fp32 {

namespace {

class Linear final : public OutputLayer {
 public:
  Linear(const Rows& w, int rows, int cols, const float* bias, const Kernels& k)
      : k_(k), w_(pack_transposed(w, rows, cols)) {
    bias_.assign(static_cast<size_t>(w_.Np), 0.0f);
    std::copy(bias, bias + rows, bias_.begin());
  }

  int width() const override { return w_.N; }
  int stride() const override { return w_.Np; }

  void logits(int rows, const float* const* h, float* const* out, Scratch& s) const override {
    logits_part(0, 1, rows, h, out, s);
  }
  void logits_part(int part, int parts, int rows, const float* const* h, float* const* out,
                   Scratch& s) const override {
    s.init.assign(static_cast<size_t>(rows), bias_.data());
    k_.gemm_rows(rows, h, s.init.data(), out, w_, part, parts);
  }

  LogSumExp log_sum_exp(const float* x) const override { return k_.log_sum_exp(x, w_.N); }

  // The column's K weights lie one panel row apart: K cache lines, not the whole matrix. Summed in double,
  // so the value is within a float's rounding of the exact dot product.
  float logit(const float* h, int column, Scratch& /*s*/) const override {
    const size_t first = w_.index(column, 0);
    const size_t step = w_.K > 1 ? w_.index(column, 1) - first : 0;
    const float* w = w_.data.data() + first;
    double acc = bias_[static_cast<size_t>(column)];
    for (int k = 0; k < w_.K; ++k) acc += double(w[static_cast<size_t>(k) * step]) * double(h[k]);
    return static_cast<float>(acc);
  }

  size_t bytes() const override { return w_.bytes() + bias_.size() * sizeof(float); }

 private:
  const Kernels& k_;
  PackedMat w_;    // [K = cols, N = rows]
  FloatBuf bias_;  // [Np], zero past N
};

}  // namespace

std::unique_ptr<OutputLayer> make_linear(const Rows& w, int rows, int cols, const float* bias,
                                         const Kernels& k) {
  return std::make_unique<Linear>(w, rows, cols, bias, k);
}

}  // namespace lstmlm::kernels::fp32
