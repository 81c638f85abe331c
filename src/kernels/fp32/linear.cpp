// The fp32 output layer: logits = bias + W h over packed panels, and a vectorised log-sum-exp.
#include "kernels/fp32/layers.hpp"
#include "kernels/fp32/tiles.hpp"

namespace lstmlm::kernels::fp32 {

namespace {

class Linear final : public OutputLayer {
 public:
  Linear(const float* w, int rows, int cols, const float* bias) : w_(pack_transposed(w, rows, cols)) {
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
    gemm_rows(rows, h, s.init.data(), out, w_, part, parts);
  }

  float log_sum_exp(const float* x) const override {
    const int n = w_.N, full = n / kLanes * kLanes;
    V16 mx = set1(-INFINITY);
    for (int j = 0; j < full; j += kLanes) mx = max(mx, load(x + j));
    if (full < n) mx = max(mx, load_n(x + full, n - full, -INFINITY));
    float m = reduce_max(mx);
    if (!std::isfinite(m)) return m;  // all -inf (or a +inf/NaN logit): nothing to normalise
    V16 vm = set1(m), s = set1(0.0f);
    for (int j = 0; j < full; j += kLanes) s = s + simd::exp(load(x + j) - vm);
    if (full < n) {
      // Tail lanes past n are loaded as m (exp(0) = 1) and multiplied by 0, so they add exactly 0.
      static const float kOnes[kLanes] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
      s = s + simd::exp(load_n(x + full, n - full, m) - vm) * load_n(kOnes, n - full, 0.0f);
    }
    return m + std::log(reduce_add(s));
  }

  size_t bytes() const override { return w_.bytes() + bias_.size() * sizeof(float); }

 private:
  PackedMat w_;    // [K = cols, N = rows]
  FloatBuf bias_;  // [Np], zero past N
};

}  // namespace

std::unique_ptr<OutputLayer> make_linear(const float* w, int rows, int cols, const float* bias) {
  return std::make_unique<Linear>(w, rows, cols, bias);
}

}  // namespace lstmlm::kernels::fp32
