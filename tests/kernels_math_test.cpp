// Vectorised exp / sigmoid / tanh (src/kernels/simd.hpp) against std:: in double, in units in the last
// place of the float result, over a dense sweep of the range the LSTM uses plus the saturated tails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "kernels/simd.hpp"

namespace simd = lstmlm::kernels::simd;

namespace {

// Distance in float ulps between a float result and the exact (double) value.
double ulps(float got, double want) {
  float w = static_cast<float>(want);
  double ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  return std::fabs(double(got) - want) / ulp;
}

double max_ulps(simd::V16 (*f)(simd::V16), const std::function<double(double)>& ref, float lo, float hi,
                float* worst_x) {
  double worst = 0;
  const int n = 1 << 16;
  alignas(64) float x[16], y[16];
  for (int i = 0; i < n; i += 16) {
    for (int l = 0; l < 16; ++l) x[l] = lo + (hi - lo) * float(i + l) / float(n);
    simd::store(y, f(simd::load(x)));
    for (int l = 0; l < 16; ++l) {
      double e = ulps(y[l], ref(double(x[l])));
      if (e > worst) {
        worst = e;
        *worst_x = x[l];
      }
    }
  }
  return worst;
}

}  // namespace

TEST(KernelsMath, ExpWithin2Ulp) {
  float wx = 0;
  EXPECT_LE(max_ulps(
                simd::exp, [](double x) { return std::exp(x); }, -87.0f, 88.0f, &wx),
            2.0)
      << "at " << wx;
  EXPECT_LE(max_ulps(
                simd::exp, [](double x) { return std::exp(x); }, -1.0f, 1.0f, &wx),
            2.0)
      << "at " << wx;
}

// The one-sided forms drop the clamp bound their side cannot reach, and must give exp's bits there:
// a sweep of each half-line past the other bound (where the kept clamp acts), plus 0 and the bounds.
TEST(KernelsMath, OneSidedExpsAreExpOnTheirSide) {
  auto same_bits = [](simd::V16 (*f)(simd::V16), float lo, float hi) {
    const int n = 1 << 16;
    alignas(64) float x[16], want[16], got[16];
    int differ = 0;
    for (int i = 0; i < n; i += 16) {
      for (int l = 0; l < 16; ++l) x[l] = lo + (hi - lo) * float(i + l) / float(n - 1);
      if (i == 0) x[1] = 0.0f, x[2] = -0.0f, x[3] = lo < 0 ? simd::kExpLow : simd::kExpHigh;
      simd::store(want, simd::exp(simd::load(x)));
      simd::store(got, f(simd::load(x)));
      differ += std::memcmp(want, got, sizeof want) != 0;
    }
    return differ;
  };
  EXPECT_EQ(same_bits(simd::exp_nonpositive, -200.0f, 0.0f), 0);
  EXPECT_EQ(same_bits(simd::exp_nonnegative, 0.0f, 200.0f), 0);
}

TEST(KernelsMath, SigmoidWithin3Ulp) {
  float wx = 0;
  EXPECT_LE(max_ulps(
                simd::sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -30.0f, 30.0f, &wx),
            3.0)
      << "at " << wx;
}

TEST(KernelsMath, TanhWithin3Ulp) {
  float wx = 0;
  auto ref = [](double x) { return std::tanh(x); };
  EXPECT_LE(max_ulps(simd::tanh, ref, -12.0f, 12.0f, &wx), 3.0) << "at " << wx;
  EXPECT_LE(max_ulps(simd::tanh, ref, -0.7f, 0.7f, &wx), 3.0) << "at " << wx;   // the polynomial branch
  EXPECT_LE(max_ulps(simd::tanh, ref, 1e-6f, 1e-3f, &wx), 3.0) << "at " << wx;  // relative accuracy near 0
}

TEST(KernelsMath, HardSigmoids) {
  alignas(64) float x[16] = {-10, -2.5f, -1, 0, 1, 2.5f, 10, -3, 3, 2, 0.5f, -0.5f, 6, -6, 2.4f, -2.4f},
                    y[16];
  simd::store(y, simd::hard_sigmoid(simd::load(x)));
  for (int l = 0; l < 16; ++l) EXPECT_NEAR(y[l], std::clamp(0.2 * x[l] + 0.5, 0.0, 1.0), 1e-7) << x[l];
  simd::store(y, simd::hard_sigmoid_keras3(simd::load(x)));
  for (int l = 0; l < 16; ++l) EXPECT_NEAR(y[l], std::clamp(x[l] / 6.0 + 0.5, 0.0, 1.0), 1e-7) << x[l];
}
