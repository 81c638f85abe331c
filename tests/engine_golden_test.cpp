// The engine against PyTorch / numpy float64 golden data (tools/make_golden.py, tests/golden/*).
#include <gtest/gtest.h>

#include <filesystem>

#include "golden_loader.hpp"
#include "lstmlm/engine.hpp"
#include "test_util.hpp"

using namespace lstmlm;
namespace fs = std::filesystem;

namespace {

constexpr double kGoldenTol = 1e-5;

std::vector<fs::path> golden_dirs() {
  std::vector<fs::path> dirs;
  for (auto& e : fs::directory_iterator(test::source_dir() / "tests" / "golden"))
    if (fs::exists(e.path() / "expected.json")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace

TEST(EngineGolden, AllCasesPresent) {
  // make_golden.py writes 8 cases: a missing directory must not silently shrink the coverage.
  EXPECT_EQ(golden_dirs().size(), 8u);
}

// The golden dirs are read by an independent reader (golden_loader.hpp) so that these tests check the
// math alone; this one closes the loop: Model::load must build the same model from the same files.
TEST(EngineGolden, LibraryLoaderGivesTheSameModelAsTheIndependentReader) {
  for (const auto& dir : golden_dirs()) {
    SCOPED_TRACE(dir.filename().string());
    auto ref = test::load_golden_model(dir);
    auto lib = Model::load(dir.string());
    ASSERT_EQ(lib->vocab_size(), ref->vocab_size());
    auto expected = nlohmann::json::parse(test::slurp_file(dir / "expected.json"));
    Sequences in;
    for (auto& s : expected["sequences"]) in.push_back(s["tokens"].get<std::vector<int32_t>>());
    std::vector<MatrixRM> lp_ref, lp_lib;
    std::vector<State> st_ref(in.size(), State::zeros(*ref)), st_lib(in.size(), State::zeros(*lib));
    Engine(ref, 1).logprobs(in, st_ref, lp_ref);
    Engine(lib, 1).logprobs(in, st_lib, lp_lib);
    for (size_t r = 0; r < in.size(); ++r) {
      // Same weights, same kernels: bit-identical, not merely close.
      EXPECT_TRUE(lp_lib[r] == lp_ref[r]) << "row " << r;
      EXPECT_EQ(st_lib[r].h, st_ref[r].h) << "row " << r;
      EXPECT_EQ(st_lib[r].c, st_ref[r].c) << "row " << r;
    }
  }
}

TEST(EngineGolden, LogprobsAndFinalStateMatchFramework) {
  for (const auto& dir : golden_dirs()) {
    SCOPED_TRACE(dir.filename().string());
    auto model = test::load_golden_model(dir);
    auto expected = nlohmann::json::parse(test::slurp_file(dir / "expected.json"));
    Sequences in;
    for (auto& s : expected["sequences"]) in.push_back(s["tokens"].get<std::vector<int32_t>>());
    for (int threads : {1, 2}) {
      Engine eng(model, EngineOptions{.threads = threads, .row_split_bytes = 0});
      std::vector<State> st(in.size(), State::zeros(*model));
      std::vector<MatrixRM> lp;
      eng.logprobs(in, st, lp);  // all sequences in one batch of mixed lengths
      for (size_t r = 0; r < in.size(); ++r) {
        const auto& e = expected["sequences"][r];
        for (size_t t = 0; t < in[r].size(); ++t)
          for (int v = 0; v < model->vocab_size(); ++v)
            ASSERT_NEAR(lp[r](Eigen::Index(t), v), e["logprobs"][t][size_t(v)].get<double>(), kGoldenTol)
                << "row " << r << " step " << t << " token " << v;
        for (size_t k = 0; k < st[r].h.size(); ++k) {
          for (size_t j = 0; j < st[r].h[k].size(); ++j)
            ASSERT_NEAR(st[r].h[k][j], e["h"][k][j].get<double>(), kGoldenTol) << "h layer " << k;
          for (size_t j = 0; j < st[r].c[k].size(); ++j)
            ASSERT_NEAR(st[r].c[k][j], e["c"][k][j].get<double>(), kGoldenTol) << "c layer " << k;
        }
      }
    }
  }
}

TEST(EngineGolden, CellClipIsActiveInTheClipCase) {
  // Guards the golden data itself: the clip case must actually reach its bounds, or it tests nothing.
  auto expected =
      nlohmann::json::parse(test::slurp_file(test::source_dir() / "tests/golden/clip_proj/expected.json"));
  double mx = 0;
  for (auto& s : expected["sequences"])
    for (auto& x : s["c"][0]) mx = std::max(mx, std::abs(x.get<double>()));
  EXPECT_DOUBLE_EQ(mx, 0.5);
}
