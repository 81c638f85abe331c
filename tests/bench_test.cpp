// The bench task's row math and output formats (no timing is asserted anywhere: speed is measured by
// bench/compare, not tested).
#include "lstmlm/tasks/bench.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::bench {
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
  // per 4-step call of the design brief.
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
  // The row names the kernels compiled into this build, not what the CPU could run.
  auto m = lstmlm::Model::random(50, 8, 16, 1, 3);
  lstmlm::Engine e(m, 1);
#if defined(__AVX512F__)
  EXPECT_EQ(e.kernels(), "fp32/avx512");
#elif defined(__AVX2__) && defined(__FMA__)
  EXPECT_EQ(e.kernels(), "fp32/avx2");
#else
  EXPECT_EQ(e.kernels(), "fp32/scalar");
#endif
  EXPECT_FALSE(build_kind().empty());
  EXPECT_EQ(shape_string(shape(554, 100, 100, 1)), "V=554 E=100 H=100x1");
}

std::vector<Row> sample_rows() {
  Row a;
  a.model = "random";
  a.shape = "V=554 E=100 H=100x1";
  a.workload = Workload::Score;
  a.batch = 2;
  a.length = 4;
  a.threads = 1;
  a.tokens_per_s = 1234.25;
  a.latency_p50_us = 12.25;
  a.note = "has, a comma and \"quotes\"";
  Row b = a;
  b.workload = Workload::Generate;
  b.note = "greedy argmax";
  return {a, b};
}

// Splits one CSV line (RFC 4180 quoting, no embedded line breaks).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out{""};
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(BenchFormat, CsvHasAHeaderAndQuotedFields) {
  auto rows = sample_rows();
  auto ls = lines(format_rows(rows, "csv"));
  ASSERT_EQ(ls.size(), 3u);
  auto header = split_csv(ls[0]);
  auto first = split_csv(ls[1]);
  ASSERT_EQ(first.size(), header.size());
  auto col = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  EXPECT_EQ(first[col("note")], rows[0].note);
  EXPECT_EQ(first[col("workload")], "score");
  EXPECT_DOUBLE_EQ(std::stod(first[col("tokens_per_s")]), 1234.25);
  EXPECT_EQ(split_csv(ls[2])[col("workload")], "generate");
}

TEST(BenchFormat, JsonAndJsonlParse) {
  auto rows = sample_rows();
  auto arr = nlohmann::json::parse(format_rows(rows, "json"));
  ASSERT_TRUE(arr.is_array());
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_EQ(arr[0]["note"], rows[0].note);
  EXPECT_EQ(arr[1]["workload"], "generate");
  EXPECT_DOUBLE_EQ(arr[0]["latency_p50_us"].get<double>(), 12.25);
  auto ls = lines(format_rows(rows, "jsonl"));
  ASSERT_EQ(ls.size(), 2u);
  for (size_t i = 0; i < ls.size(); ++i) EXPECT_EQ(nlohmann::json::parse(ls[i]), arr[i]);
}

TEST(BenchFormat, MarkdownTableIsRectangular) {
  auto ls = lines(format_rows(sample_rows(), "md"));
  ASSERT_EQ(ls.size(), 4u);  // header, separator, two rows
  auto cells = [](const std::string& l) { return std::count(l.begin(), l.end(), '|'); };
  for (const auto& l : ls) EXPECT_EQ(cells(l), cells(ls[0])) << l;
  EXPECT_NE(ls[2].find("1234 ± 0"), std::string::npos) << ls[2];
  EXPECT_THROW(format_rows({}, "xml"), UsageError);
}

}  // namespace
}  // namespace lstmlm::bench
