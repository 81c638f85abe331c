// The draw's building blocks (src/tasks/draw.hpp): the weights are the scalar definition bit for bit (what
// every ISA computes), and the inverse CDF on hand-made weights with the expected positions derived in the
// comments.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "lstmlm/error.hpp"
#include "tasks/draw.hpp"

namespace {

using lstmlm::tasks::detail::draw_position;
using lstmlm::tasks::detail::exp_weights;
using lstmlm::tasks::detail::plain_log_weights;
using lstmlm::tasks::detail::total_weight;

// The weight of one log-weight written out in scalar IEEE operations, one rounding each (std::fma rounds
// once): the exp of kernels/simd.hpp, 0 below -87.3. k = round(16 x / ln2) (the fma with 1.5 * 2^23
// rounds to an integer), r = x - k ln2 / 16 in two parts, e^r - 1 to third order, times 2^(k / 16): the
// table entry 2^((k mod 16) / 16) rounded to float, then 2^floor(k / 16), exact (ldexp) in this range.
// An ISA's lanes must give these bits.
float scalar_weight(float x) {
  if (x < -87.3f) return 0.0f;
  x = std::min(x, 88.37626f);
  const float k = std::fma(x, 23.0831206542f, 12582912.0f) - 12582912.0f;
  float r = std::fma(k, -0.0433349609375f, x);
  r = std::fma(k, 1.32621525e-5f, r);
  const float p = std::fma(r * r, std::fma(r, 1.0f / 6.0f, 0.5f), r);
  const double q = std::floor(double(k) / 16.0), j = double(k) - 16.0 * q;
  const float t = static_cast<float>(std::exp2(j / 16.0));
  return std::ldexp(std::fma(t, p, t), static_cast<int>(q));
}

TEST(SamplerDraw, WeightsAreTheScalarDefinitionBitForBit) {
  std::vector<float> x;
  for (float v = -90.0f; v <= 0.0f; v += 0.0137f) x.push_back(v);
  x.push_back(-87.3f);
  x.push_back(std::nextafter(-87.3f, 0.0f));
  x.push_back(-0.0f);
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(-1e-30f);
  const std::vector<float> in = x;
  exp_weights(x);  // 6,576 + 5 entries: full vectors and a tail
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(x[i]), std::bit_cast<uint32_t>(scalar_weight(in[i]))) << "x " << in[i];
  EXPECT_EQ(x[x.size() - 2], 0.0f);  // -inf
  EXPECT_EQ(x[x.size() - 3], 1.0f);  // exp(-0) = 1 exactly: the most likely token weighs 1
}

TEST(SamplerDraw, PlainLogWeightsSubtractTheFiniteMaxAndDropTheRest) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> v = {-2.0f, nan, -0.5f, inf, -inf, -1.25f};
  std::vector<float> x(v.size());
  plain_log_weights(v, 0.5f, x);  // max of the finite: -0.5; (v + 0.5) / 0.5
  EXPECT_EQ(x, (std::vector<float>{-3.0f, -inf, 0.0f, -inf, -inf, -1.5f}));
  const std::vector<float> none = {nan, -inf, inf};
  EXPECT_THROW(plain_log_weights(none, 1.0f, x), lstmlm::ModelError);
}

TEST(SamplerDraw, InverseCdfSkipsZerosAndCrossesBlocks) {
  std::vector<double> blocks;
  // Weights 1 at 2 and 3 at 4 (total 4): u * 4 < 1 takes 2; from u = 0.25 (target 1.0, and 1 > 1 is
  // false) position 4.
  const std::vector<float> w = {0, 0, 1, 0, 3};
  const double total = total_weight(w, blocks);
  EXPECT_EQ(total, 4.0);
  EXPECT_EQ(draw_position(w, blocks, total, 0.0), 2);
  EXPECT_EQ(draw_position(w, blocks, total, 0.2499), 2);
  EXPECT_EQ(draw_position(w, blocks, total, 0.25), 4);
  EXPECT_EQ(draw_position(w, blocks, total, 0.9999), 4);
  // 200 positions, three blocks of 64 and one of 8: weights 2 at 63 (block 0), 1 at 64 (block 1) and 1 at
  // 199 (block 3), total 4. Targets below 2 stay in block 0; [2, 3) is 64; [3, 4) is 199.
  std::vector<float> long_w(200, 0.0f);
  long_w[63] = 2;
  long_w[64] = 1;
  long_w[199] = 1;
  const double t2 = total_weight(long_w, blocks);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks, (std::vector<double>{2, 1, 0, 1}));
  EXPECT_EQ(draw_position(long_w, blocks, t2, 0.49), 63);
  EXPECT_EQ(draw_position(long_w, blocks, t2, 0.5), 64);
  EXPECT_EQ(draw_position(long_w, blocks, t2, 0.74), 64);
  EXPECT_EQ(draw_position(long_w, blocks, t2, 0.75), 199);
  // Nothing to draw.
  const std::vector<float> zeros(70, 0.0f);
  const double t0 = total_weight(zeros, blocks);
  EXPECT_EQ(draw_position(zeros, blocks, t0, 0.5), -1);
}

}  // namespace
