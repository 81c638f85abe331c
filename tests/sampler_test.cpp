// The sampling chain on hand-made distributions (expected sets and renormalised probabilities derived in
// the comments), the random streams, and a chi-square test of the draws.
#include "lstmlm/tasks/sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "lstmlm/error.hpp"

namespace {

using lstmlm::tasks::Rng;
using lstmlm::tasks::Sampler;
using lstmlm::tasks::SamplerParams;

std::vector<float> logs(const std::vector<double>& probs) {
  std::vector<float> lp;
  for (double p : probs) lp.push_back(static_cast<float>(std::log(p)));
  return lp;
}

lstmlm::tasks::SamplerParams params(float temperature = 1.0f) {
  lstmlm::tasks::SamplerParams p;
  p.temperature = temperature;
  return p;
}

// Checks the kept ids and their probabilities (to float rounding of the inputs).
void expect_dist(const lstmlm::tasks::Sampler& s, const std::vector<double>& probs,
                 const std::vector<int32_t>& history, const std::vector<int32_t>& ids,
                 const std::vector<double>& expected) {
  auto lp = logs(probs);
  auto d = s.distribution(lp, history);
  ASSERT_EQ(d.ids, ids);
  ASSERT_EQ(d.probs.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(d.probs[i], expected[i], 1e-6) << "id " << ids[i];
}

TEST(Sampler, GreedyIsArgmaxWithTiesToLowestIdAndDrawsNothing) {
  lstmlm::tasks::Sampler s(params(0.0f));
  auto lp = logs({0.2, 0.4, 0.4});
  lstmlm::tasks::Rng rng(7), untouched(7);
  EXPECT_EQ(s.sample(lp, {}, rng), 1);
  EXPECT_EQ(rng.next(), untouched.next());
  expect_dist(s, {0.1, 0.2, 0.7}, {}, {2}, {1.0});
}

TEST(Sampler, NoTransformKeepsTheModelDistribution) {
  lstmlm::tasks::Sampler s(params());
  expect_dist(s, {0.1, 0.2, 0.3, 0.4}, {}, {0, 1, 2, 3}, {0.1, 0.2, 0.3, 0.4});
}

TEST(Sampler, ZeroProbabilityTokensAreNeverCandidates) {
  lstmlm::tasks::Sampler s(params());
  std::vector<float> lp = {std::log(0.5f), -std::numeric_limits<float>::infinity(), std::log(0.5f)};
  auto d = s.distribution(lp, {});
  EXPECT_EQ(d.ids, (std::vector<int32_t>{0, 2}));
}

TEST(Sampler, TopKKeepsTheKMostLikelyTiesByLowerId) {
  lstmlm::tasks::SamplerParams p = params();
  const std::vector<double> probs = {0.1, 0.3, 0.2, 0.3, 0.1};
  p.top_k = 2;  // 0.3 (id 1), 0.3 (id 3) -> 1/2 each
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {1, 3}, {0.5, 0.5});
  p.top_k = 4;  // + 0.2 (id 2) + one of the tied 0.1: id 0 (lower) -> mass 0.9
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {0, 1, 2, 3},
              {0.1 / 0.9, 0.3 / 0.9, 0.2 / 0.9, 0.3 / 0.9});
  p.top_k = 10;  // more than V: off
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {0, 1, 2, 3, 4}, probs);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingPTiesByLowerId) {
  lstmlm::tasks::SamplerParams p = params();
  const std::vector<double> probs = {0.1, 0.4, 0.2, 0.2, 0.1};
  p.top_p = 0.5f;  // 0.4 < 0.5; + 0.2 of id 2 (tie with id 3) = 0.6 -> {1, 2} = 2/3, 1/3
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {1, 2}, {2.0 / 3, 1.0 / 3});
  p.top_p = 0.4f;  // 0.4 reaches 0.4 exactly: the top token alone
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {1}, {1.0});
  p.top_p = 0.65f;  // 0.4 + 0.2 + 0.2 = 0.8 -> {1, 2, 3} = 1/2, 1/4, 1/4
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {1, 2, 3}, {0.5, 0.25, 0.25});
  p.top_p = 0.85f;  // 0.8 + 0.1 of id 0 (tie with id 4) = 0.9
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {0, 1, 2, 3},
              {0.1 / 0.9, 0.4 / 0.9, 0.2 / 0.9, 0.2 / 0.9});
  p.top_p = 0.01f;  // always at least the top token
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {1}, {1.0});
}

TEST(Sampler, TopPSortsBeyondItsFirstPrefix) {
  // 300 equal tokens: top-p 0.5 needs 150 of them, more than the first sorted prefix of 64; ties -> ids
  // 0..149.
  lstmlm::tasks::SamplerParams p = params();
  p.top_p = 0.5f;
  std::vector<double> probs(300, 1.0 / 300);
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < 150; ++i) ids.push_back(i);
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, ids, std::vector<double>(150, 1.0 / 150));
}

TEST(Sampler, TopPActsOnTheMassLeftByTopK) {
  // {0.4, 0.3, 0.2, 0.1}: top-k 2 leaves 0.4/0.7 = 0.571 and 0.3/0.7; top-p 0.5 then keeps id 0 alone,
  // whereas top-p 0.5 on the full distribution needs 0.4 + 0.3.
  lstmlm::tasks::SamplerParams p = params();
  p.top_p = 0.5f;
  expect_dist(lstmlm::tasks::Sampler(p), {0.4, 0.3, 0.2, 0.1}, {}, {0, 1}, {0.4 / 0.7, 0.3 / 0.7});
  p.top_k = 2;
  expect_dist(lstmlm::tasks::Sampler(p), {0.4, 0.3, 0.2, 0.1}, {}, {0}, {1.0});
}

TEST(Sampler, MinPKeepsTokensAtLeastMinPTimesTheTop) {
  lstmlm::tasks::SamplerParams p = params();
  const std::vector<double> probs = {0.05, 0.5, 0.25, 0.2};
  p.min_p = 0.5f;  // p >= 0.25: {1, 2} (0.25 exactly on the bound is kept) -> 2/3, 1/3
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {1, 2}, {2.0 / 3, 1.0 / 3});
  p.min_p = 0.4f;  // p >= 0.2: {1, 2, 3} -> mass 0.95
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {1, 2, 3}, {0.5 / 0.95, 0.25 / 0.95, 0.2 / 0.95});
  p.min_p = 1.0f;  // only the top
  expect_dist(lstmlm::tasks::Sampler(p), probs, {}, {1}, {1.0});
}

TEST(Sampler, TemperatureRaisesProbabilitiesToOneOverT) {
  // T = 0.5: p^2 = 0.25, 0.0625, 0.0625 -> 2/3, 1/6, 1/6.
  expect_dist(lstmlm::tasks::Sampler(params(0.5f)), {0.5, 0.25, 0.25}, {}, {0, 1, 2},
              {2.0 / 3, 1.0 / 6, 1.0 / 6});
  // T = 2: sqrt(p) = 0.70711, 0.5, 0.5 -> / 1.70711.
  const double z = std::sqrt(0.5) + 1.0;
  expect_dist(lstmlm::tasks::Sampler(params(2.0f)), {0.5, 0.25, 0.25}, {}, {0, 1, 2},
              {std::sqrt(0.5) / z, 0.5 / z, 0.5 / z});
}

TEST(Sampler, RepeatPenaltyRaisesRecentTokensToThePowerR) {
  lstmlm::tasks::SamplerParams p = params();
  p.repeat_penalty = 2.0f;
  // id 0: 0.5^2 = 0.25 -> all three 0.25 -> 1/3 each; repeated occurrences are penalised once.
  expect_dist(lstmlm::tasks::Sampler(p), {0.5, 0.25, 0.25}, {0}, {0, 1, 2}, {1.0 / 3, 1.0 / 3, 1.0 / 3});
  expect_dist(lstmlm::tasks::Sampler(p), {0.5, 0.25, 0.25}, {0, 0, 0}, {0, 1, 2},
              {1.0 / 3, 1.0 / 3, 1.0 / 3});
  // repeat_last_n = 1: only id 1 (the last) is penalised: 0.0625 -> 0.5, 0.0625, 0.25 over 0.8125.
  p.repeat_last_n = 1;
  expect_dist(lstmlm::tasks::Sampler(p), {0.5, 0.25, 0.25}, {0, 1}, {0, 1, 2},
              {0.5 / 0.8125, 0.0625 / 0.8125, 0.25 / 0.8125});
  p.repeat_last_n = 0;  // no history penalised
  expect_dist(lstmlm::tasks::Sampler(p), {0.5, 0.25, 0.25}, {0, 1}, {0, 1, 2}, {0.5, 0.25, 0.25});
  // R < 1 favours recent tokens: 0.25^0.5 = 0.5 -> 0.5, 0.5, 0.25 over 1.25.
  p.repeat_penalty = 0.5f;
  p.repeat_last_n = -1;
  expect_dist(lstmlm::tasks::Sampler(p), {0.5, 0.25, 0.25}, {1}, {0, 1, 2}, {0.4, 0.4, 0.2});
}

TEST(Sampler, RepeatPenaltyComesBeforeGreedyAndTopK) {
  lstmlm::tasks::SamplerParams p = params(0.0f);
  p.repeat_penalty = 2.0f;
  // 0.5^2 = 0.25 < 0.3: the argmax moves to id 1.
  expect_dist(lstmlm::tasks::Sampler(p), {0.5, 0.3, 0.2}, {0}, {1}, {1.0});
  p.temperature = 1.0f;
  p.top_k = 1;
  expect_dist(lstmlm::tasks::Sampler(p), {0.5, 0.3, 0.2}, {0}, {1}, {1.0});
}

TEST(Sampler, RejectsOutOfRangeOptions) {
  auto bad = [](auto set) {
    lstmlm::tasks::SamplerParams p;
    set(p);
    EXPECT_THROW(lstmlm::tasks::Sampler{p}, lstmlm::UsageError);
  };
  bad([](lstmlm::tasks::SamplerParams& p) { p.temperature = -0.1f; });
  bad([](lstmlm::tasks::SamplerParams& p) { p.temperature = std::numeric_limits<float>::infinity(); });
  bad([](lstmlm::tasks::SamplerParams& p) { p.top_k = -1; });
  bad([](lstmlm::tasks::SamplerParams& p) { p.top_p = 0.0f; });
  bad([](lstmlm::tasks::SamplerParams& p) { p.top_p = 1.5f; });
  bad([](lstmlm::tasks::SamplerParams& p) { p.min_p = -0.5f; });
  bad([](lstmlm::tasks::SamplerParams& p) { p.repeat_penalty = 0.0f; });
  bad([](lstmlm::tasks::SamplerParams& p) { p.repeat_last_n = -2; });
}

TEST(Rng, StreamsAreReproducibleAndDistinct) {
  lstmlm::tasks::Rng a = lstmlm::tasks::Rng::stream(42, 3), b = lstmlm::tasks::Rng::stream(42, 3),
                     c = lstmlm::tasks::Rng::stream(42, 4), d = lstmlm::tasks::Rng::stream(43, 3);
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    EXPECT_NE(x, c.next());
    EXPECT_NE(x, d.next());
  }
  lstmlm::tasks::Rng u(1);
  for (int i = 0; i < 10000; ++i) {
    double v = u.uniform();
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
  }
}

// Pearson's X^2 over 9 categories has, for a correct sampler and N = 200000 draws (every expected count
// >= 0.01 N = 2000, far inside the asymptotic regime), approximately a chi-square law with 8 degrees of
// freedom, whose tail is in closed form: P(X^2 > x) = exp(-x/2) * sum_{i<4} (x/2)^i / i!. At x = 45 this
// is 3.7e-7 (computed below), so the bound fails with probability < 1e-6 when the sampler is right.
double chi2_tail_df8(double x) {
  double y = x / 2, term = 1, sum = 0;
  for (int i = 0; i < 4; ++i) {
    sum += term;
    term *= y / (i + 1);
  }
  return std::exp(-y) * sum;
}

double chi_square(const lstmlm::tasks::Sampler& s, const std::vector<double>& probs,
                  const std::vector<double>& expected, uint64_t seed, int n) {
  auto lp = logs(probs);
  std::vector<int> counts(probs.size(), 0);
  lstmlm::tasks::Rng rng = lstmlm::tasks::Rng::stream(seed, 0);
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(s.sample(lp, {}, rng))];
  double x2 = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (expected[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "id " << i << " must never be drawn";
      continue;
    }
    double e = expected[i] * n;
    x2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return x2;
}

TEST(Sampler, DrawsFollowTheDistributionChiSquare) {
  const double bound = 45.0;
  ASSERT_LT(chi2_tail_df8(bound), 1e-6);
  const std::vector<double> probs = {0.02, 0.05, 0.08, 0.10, 0.12, 0.13, 0.15, 0.17, 0.18};
  double x2 = chi_square(lstmlm::tasks::Sampler(params()), probs, probs, 20240601, 200000);
  EXPECT_LT(x2, bound);
}

TEST(Sampler, DrawsAfterTransformsFollowTheTransformedDistributionChiSquare) {
  // Temperature 0.5 squares the probabilities; with min-p off and top-k off every token stays, so the
  // expected law is p^2 / sum p^2 (all 9 categories, 8 degrees of freedom, same bound as above).
  const std::vector<double> probs = {0.06, 0.07, 0.08, 0.10, 0.12, 0.13, 0.14, 0.15, 0.15};
  std::vector<double> expected;
  double z = 0;
  for (double p : probs) z += p * p;
  for (double p : probs) expected.push_back(p * p / z);
  double x2 = chi_square(lstmlm::tasks::Sampler(params(0.5f)), probs, expected, 7, 200000);
  EXPECT_LT(x2, 45.0);
}

TEST(Sampler, DrawsNeverLeaveTheTopKSet) {
  lstmlm::tasks::SamplerParams p = params();
  p.top_k = 3;  // ids 6, 7, 8 (0.15, 0.17, 0.18)
  const std::vector<double> probs = {0.02, 0.05, 0.08, 0.10, 0.12, 0.13, 0.15, 0.17, 0.18};
  std::vector<double> expected(9, 0.0);
  expected[6] = 0.15 / 0.5;
  expected[7] = 0.17 / 0.5;
  expected[8] = 0.18 / 0.5;
  // 3 categories: 2 degrees of freedom, tail exp(-x/2): x = 30 gives 3.1e-7 < 1e-6.
  double x2 = chi_square(lstmlm::tasks::Sampler(p), probs, expected, 99, 100000);
  EXPECT_LT(x2, 30.0);
}

}  // namespace

namespace {

// Random log-probabilities with the awkward entries: -inf, NaN, a tie with entry 0; peaked or flat.
std::vector<float> awkward_logprobs(lstmlm::tasks::Rng& gen, int trial) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const size_t V = 1 + gen.next() % 600;
  std::vector<float> lp(V);
  const double scale = trial % 3 == 0 ? 30.0 : 3.0;
  for (auto& x : lp) x = static_cast<float>(-scale * gen.uniform());
  if (V > 4) {
    lp[gen.next() % V] = -inf;
    lp[gen.next() % V] = nan;
    lp[gen.next() % V] = lp[0];
  }
  if (!std::isfinite(lp[V - 1])) lp[V - 1] = -1.0f;  // keep at least one candidate
  return lp;
}

// The draw from the documented semantics in float64 with std::exp: p_i proportional to exp((lp_i -
// max) / T), the first id whose cumulative probability exceeds u. -1 when u falls within `margin` of a
// boundary, where float rounding of the weights may legitimately decide.
int32_t float64_draw(const std::vector<float>& lp, double T, double u, double margin) {
  double mx = -INFINITY;
  for (float v : lp)
    if (std::isfinite(v)) mx = std::max(mx, double(v));
  std::vector<double> w(lp.size(), 0.0);
  double z = 0;
  for (size_t i = 0; i < lp.size(); ++i)
    if (std::isfinite(lp[i])) z += w[i] = std::exp((double(lp[i]) - mx) / T);
  double cum = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == 0) continue;
    const double next = cum + w[i] / z;
    if (std::abs(u - cum) < margin || std::abs(u - next) < margin) return -1;
    if (next > u) return static_cast<int32_t>(i);
    cum = next;
  }
  return -1;
}

}  // namespace

// The chain without filters is fused in lstmlm::tasks::Sampler::sample (float lanes, no vector per token). It
// must draw exactly what the general chain draws when its filters keep every token (top-k above V): the same
// weights at the same positions, so the same bits, from the same stream.
TEST(SamplerFastPath, DrawsEqualTheFilteredChainDrawForDraw) {
  lstmlm::tasks::Rng gen(12345);
  for (float t : {1.0f, 0.7f, 1.9f}) {
    lstmlm::tasks::SamplerParams keep_all = params(t);
    keep_all.top_k = 1 << 30;
    lstmlm::tasks::Sampler fused(params(t)), general(keep_all);
    for (int trial = 0; trial < 200; ++trial) {
      const std::vector<float> lp = awkward_logprobs(gen, trial);
      lstmlm::tasks::Rng a(trial), b(trial);
      for (int draw = 0; draw < 20; ++draw)
        ASSERT_EQ(fused.sample(lp, {}, a), general.sample(lp, {}, b)) << "t " << t << " trial " << trial;
    }
  }
  // A repeat penalty with no history in reach is still the plain chain; with one it is not (other path).
  lstmlm::tasks::SamplerParams p = params();
  p.repeat_penalty = 1.3f;
  lstmlm::tasks::SamplerParams q = p;
  q.top_k = 1 << 30;
  std::vector<float> lp = logs({0.5, 0.3, 0.2});
  lstmlm::tasks::Rng a(7), b(7);
  for (int draw = 0; draw < 50; ++draw)
    EXPECT_EQ(lstmlm::tasks::Sampler(p).sample(lp, {}, a), lstmlm::tasks::Sampler(q).sample(lp, {}, b));
}

// Against float64 with std::exp: every draw whose uniform is not within 1e-6 of a cumulative boundary
// picks the same id (the float weights are within a few ulp, 1e-6 relative, of the exact ones).
TEST(SamplerFastPath, DrawsAreTheFloat64InverseCdf) {
  lstmlm::tasks::Rng gen(99);
  int compared = 0, near_boundary = 0;
  for (float t : {1.0f, 0.5f, 2.5f}) {
    lstmlm::tasks::Sampler s(params(t));
    for (int trial = 0; trial < 150; ++trial) {
      const std::vector<float> lp = awkward_logprobs(gen, trial);
      for (int draw = 0; draw < 20; ++draw) {
        lstmlm::tasks::Rng r(gen.next());
        lstmlm::tasks::Rng copy = r;
        const int32_t want = float64_draw(lp, t, copy.uniform(), 1e-6);
        const int32_t got = s.sample(lp, {}, r);
        if (want < 0) {
          ++near_boundary;
          continue;
        }
        ++compared;
        ASSERT_EQ(got, want) << "t " << t << " trial " << trial << " draw " << draw;
      }
    }
  }
  EXPECT_GT(compared, 8900);  // of 9000: boundaries within 1e-6 are rare
  EXPECT_LT(near_boundary, 100);
}

TEST(SamplerFastPath, ProbabilitiesAreTheFloat64OnesWithinFloatRoundingOfTheLogWeight) {
  lstmlm::tasks::Rng gen(5);
  for (float t : {1.0f, 0.8f}) {
    lstmlm::tasks::Sampler s(params(t));
    for (int trial = 0; trial < 50; ++trial) {
      const std::vector<float> lp = awkward_logprobs(gen, trial);
      auto d = s.distribution(lp, {});
      double mx = -INFINITY, z = 0;
      for (float v : lp)
        if (std::isfinite(v)) mx = std::max(mx, double(v));
      for (float v : lp)
        if (std::isfinite(v)) z += std::exp((double(v) - mx) / t);
      ASSERT_FALSE(d.ids.empty());
      for (size_t j = 0; j < d.ids.size(); ++j) {
        const double x = (double(lp[size_t(d.ids[j])]) - mx) / t;
        const double want = std::exp(x) / z;
        // The log-weight x is rounded to float (relative 2^-24, so exp moves by |x| 2^-24 relative), then
        // the division by T and the exp add a few float ulp: the model's own log-probabilities carry the
        // same |x| 2^-24 from its float arithmetic.
        EXPECT_NEAR(d.probs[j], want, want * (4e-7 + 1.2e-7 * std::abs(x))) << "id " << d.ids[j];
      }
    }
  }
}

TEST(SamplerFastPath, NoFiniteLogProbabilityIsAModelError) {
  lstmlm::tasks::Sampler s(params());
  lstmlm::tasks::Rng r(1);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> lp{-inf, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_THROW(s.sample(lp, {}, r), lstmlm::ModelError);
}
