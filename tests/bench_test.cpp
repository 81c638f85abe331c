// The bench task's row math (its output formats: tests/output_cli_test.cpp; no timing is asserted anywhere:
// speed is measured by bench/compare, not tested).
#include "lstmlm/tasks/bench.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/cpu.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::tasks::bench {
namespace {

ModelConfig shape(int V, int E, int H, int L) {
  ModelConfig c;
  c.vocab_size = V;
  c.embedding_dim = E;
  for (int k = 0; k < L; ++k) c.layers.push_back(LayerConfig{H, 0, RecurrentActivation::Sigmoid, {}});
  return c;
}

TEST(BenchFlops, SeedShapeByHand) {
  // SEED: V 554, E 100, H 100, 1 layer. Per token the LSTM is 2*4*100*(100+100) = 160,000 FLOPs and
  // the projection 2*100*554 = 110,800.
  ModelConfig c = shape(554, 100, 100, 1);
  EXPECT_DOUBLE_EQ(flops_per_call(c, Workload::Score, 1, 4), 4 * (160000.0 + 110800.0));
  // predict projects the last step only: 4*160,000 + 110,800 = 750,800, the "about 0.75 MFLOP"
  // per 4-step call that the seed model (README) spends milliseconds of framework overhead on.
  EXPECT_DOUBLE_EQ(flops_per_call(c, Workload::Predict, 1, 4), 750800.0);
  EXPECT_DOUBLE_EQ(flops_per_call(c, Workload::Predict, 3, 4), 3 * 750800.0);
  EXPECT_DOUBLE_EQ(flops_per_call(c, Workload::Generate, 2, 5), 10 * 270800.0);
}

TEST(BenchFlops, MediumShapeByHand) {
  // MEDIUM: V 10000, E 650, H 650, 2 layers: each layer 2*2600*(650+650) = 6,760,000, projection
  // 2*650*10000 = 13,000,000, so 26,520,000 FLOPs per scored token.
  ModelConfig c = shape(10000, 650, 650, 2);
  EXPECT_DOUBLE_EQ(flops_per_call(c, Workload::Score, 64, 35), 64 * 35 * 26520000.0);
}

TEST(BenchFlops, OneHotAndProjectedLayers) {
  // One-hot input (E = 0): the first layer's input width is V. Layer 0: H 8, P 4 -> 2*32*(10+4) + 2*4*8
  // = 960; layer 1: H 6 on the 4-wide projection -> 2*24*(4+6) = 480; projection 2*6*10 = 120.
  ModelConfig c;
  c.vocab_size = 10;
  c.embedding_dim = 0;
  c.layers.push_back(LayerConfig{8, 4, RecurrentActivation::Sigmoid, {}});
  c.layers.push_back(LayerConfig{6, 0, RecurrentActivation::Sigmoid, {}});
  EXPECT_DOUBLE_EQ(flops_per_call(c, Workload::Score, 1, 1), 960.0 + 480.0 + 120.0);
  EXPECT_EQ(shape_string(c), "V=10 E=0 H=8/P4,6");
}

TEST(BenchFlops, GruAndRnnLayers) {
  // G gates per layer: a GRU's layer 0 (E 6, H 8) 2*24*(6+8) = 672, layer 1 2*24*(8+8) = 768; the decoder
  // 2*8*40 = 640. The same shape as simple RNNs: 2*8*14 + 2*8*16 + 640 = 1120.
  ModelConfig c;
  c.vocab_size = 40;
  c.embedding_dim = 6;
  for (int k = 0; k < 2; ++k) {
    LayerConfig l;
    l.hidden_size = 8;
    l.cell = CellType::Gru;
    c.layers.push_back(l);
  }
  EXPECT_DOUBLE_EQ(flops_per_call(c, Workload::Score, 1, 1), 672.0 + 768.0 + 640.0);
  EXPECT_EQ(shape_string(c), "V=40 E=6 H=8x2 gru");
  for (auto& l : c.layers) l.cell = CellType::Rnn;
  EXPECT_DOUBLE_EQ(flops_per_call(c, Workload::Score, 1, 1), 1120.0);
  c.layers[0].cell = CellType::Lstm;
  EXPECT_EQ(shape_string(c), "V=40 E=6 H=8,8 rnn");
}

TEST(BenchStats, PercentileMatchesNumpy) {
  // Reference values from numpy.percentile (linear interpolation, its default).
  std::vector<double> a{10, 2, 4, 1, 3};
  EXPECT_DOUBLE_EQ(percentile(a, 50), 3.0);
  EXPECT_NEAR(percentile(a, 99), 9.76, 1e-12);
  EXPECT_DOUBLE_EQ(percentile(a, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(a, 100), 10.0);
  EXPECT_DOUBLE_EQ(percentile({7.0}, 99), 7.0);
  EXPECT_DOUBLE_EQ(percentile({5, 1}, 25), 2.0);
  EXPECT_THROW(percentile({}, 50), UsageError);
}

TEST(BenchStats, WorkloadNamesRoundTrip) {
  for (Workload w : {Workload::Score, Workload::Predict, Workload::Generate, Workload::Startup})
    EXPECT_EQ(parse_workload(to_string(w)), w);
  EXPECT_THROW(parse_workload("train"), UsageError);
}

TEST(BenchStats, IsaAndShape) {
  // The row names the kernels that run: the best fp32 level this CPU has, whatever the build's target.
  auto m = lstmlm::Model::random(50, 8, 16, 1, 3);
  lstmlm::Engine e(m, 1);
  const auto& cpu = lstmlm::kernels::cpu_features();
#if defined(__aarch64__)
  EXPECT_EQ(e.kernels(), cpu.neon ? "fp32/neon" : "fp32/scalar");
#else
  EXPECT_EQ(e.kernels(), cpu.avx512 ? "fp32/avx512" : cpu.avx2_fma ? "fp32/avx2" : "fp32/scalar");
#endif
  EXPECT_FALSE(build_kind().empty());
  EXPECT_EQ(shape_string(shape(554, 100, 100, 1)), "V=554 E=100 H=100x1");
}

}  // namespace
}  // namespace lstmlm::tasks::bench
