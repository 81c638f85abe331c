// A NaN in the weights reaches the scores: every such token is still a scored token, counted and shown as
// not finite, and the run warns. (NaN used to be the internal "not scored" marker, so these tokens
// vanished from the totals and a finite perplexity was printed.)
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "hostile_util.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/model.hpp"
#include "model_files.hpp"

using lstmlm::test::TempDir;

namespace {

// A random model (tokens t0..t11, no bos/eos/unk) whose decoder bias of t3 is NaN: t3's logit is NaN at
// every position. (The fp32 kernels' max-reductions pass over a NaN logit, so the other tokens keep
// finite log-probs; PyTorch's log_softmax would make them all NaN. Either way t3 is not finite.)
void write_model_with_nan_row(const TempDir& dir) {
  auto f = lstmlm::test::files_of(*lstmlm::Model::random(12, 4, 6, 1, 3));
  for (auto& t : f.tensors)
    if (t.name == "decoder.bias") t.values[3] = std::numeric_limits<float>::quiet_NaN();
  f.rebuild_weights();
  f.write(dir.path());
}

}  // namespace

TEST(ScoreNonfinite, NanLogProbsAreCountedShownAndWarned) {
  TempDir dir("nan_score");
  write_model_with_nan_row(dir);
  // No start token: t1 is context only; t2, t5, t3, t4 are scored, t3 with a NaN log-prob.
  auto r = lstmlm::test::run_cli_to("score -m '" + dir.path().string() + "' --output-format jsonl",
                                    lstmlm::test::Stdout::File, "t1 t2 t5 t3 t4\n");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  auto line = nlohmann::json::parse(first), summary = nlohmann::json::parse(second);
  EXPECT_EQ(line["tokens"], 4);
  EXPECT_EQ(line["nonfinite"], 1);
  EXPECT_TRUE(line["logprob"].is_null());              // a NaN total, not the sum of the finite part
  EXPECT_TRUE(line["words"][0]["logprob"].is_null());  // context only
  EXPECT_TRUE(line["words"][1]["logprob"].is_number());
  EXPECT_TRUE(line["words"][2]["logprob"].is_number());
  EXPECT_TRUE(line["words"][3]["logprob"].is_null());
  EXPECT_TRUE(line["words"][4]["logprob"].is_number());
  EXPECT_EQ(summary["tokens"], 4);
  EXPECT_EQ(summary["nonfinite"], 1);
  EXPECT_TRUE(summary["perplexity"].is_null());
  EXPECT_NE(r.err.find("lstmlm: warning: 1 scored token has a non-finite log-probability (the first on -:1)"),
            std::string::npos)
      << r.err;

  // The text format prints the values themselves, so a NaN is not mistaken for an unscored '-'.
  auto t = lstmlm::test::run_cli_to("score -m '" + dir.path().string() + "'", lstmlm::test::Stdout::File,
                                    "t1 t2 t5 t3 t4\n");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("t3=3 nan"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("tokens=4 "), std::string::npos) << t.out;
}

// A model without NaN keeps its records exactly as before: no "nonfinite" field appears.
TEST(ScoreNonfinite, FiniteScoresHaveNoNonfiniteField) {
  TempDir dir("finite_score");
  lstmlm::test::files_of(*lstmlm::Model::random(12, 4, 6, 1, 3)).write(dir.path());
  auto r = lstmlm::test::run_cli_to("score -m '" + dir.path().string() + "' --output-format jsonl",
                                    lstmlm::test::Stdout::File, "t1 t2 t5 t3 t4\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("nonfinite"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

// Logits near 1e9 (a decoder bias of +1e9, whose float ulp is 64): every logit rounds to the same 1e9, so
// the distribution is uniform and each log-prob is -ln 12. Adding the max and the log of the shifted sum
// before subtracting (1e9 + ln 12 rounds to 1e9) made every log-prob 0, every probability 1, with exit 0.
TEST(ScoreNonfinite, HugeLogitsKeepTheirLogSoftmax) {
  TempDir dir("huge_bias");
  auto f = lstmlm::test::files_of(*lstmlm::Model::random(12, 4, 6, 1, 3));
  for (auto& t : f.tensors)
    if (t.name == "decoder.bias")
      for (auto& v : t.values) v += 1e9f;
  f.rebuild_weights();
  f.write(dir.path());
  for (const char* precision : {"fp32", "bf16", "int8"}) {
    if (lstmlm::kernels_for(lstmlm::parse_precision(precision)).ends_with("/refused"))
      continue;  // bf16 on an AVX2-only CPU
    auto r = lstmlm::test::run_cli_to(
        "score -m '" + dir.path().string() + "' --output-format jsonl --entropy --precision " + precision,
        lstmlm::test::Stdout::File, "t1 t2 t5 t3 t4\n");
    ASSERT_EQ(r.status, 0) << precision << ": " << r.err;
    auto line = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
    for (size_t w = 1; w < 5; ++w) {
      EXPECT_NEAR(line["words"][w]["logprob"].get<double>(), -std::log(12.0), 1e-5) << precision << " " << w;
      EXPECT_NEAR(line["words"][w]["entropy"].get<double>(), std::log(12.0), 1e-5) << precision << " " << w;
    }
  }
}
