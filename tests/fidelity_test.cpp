// The fidelity task (lstmlm/tasks/fidelity.hpp): its arithmetic on hand-made distributions, fp32 against
// itself on the bundled models (KL exactly 0, full agreement, score's perplexity), and the acceptance
// thresholds for bf16 and int8 (docs/precision.md, "Acceptance thresholds").
#include "lstmlm/tasks/fidelity.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/score.hpp"
#include "test_util.hpp"

namespace {

using lstmlm::Engine;
using lstmlm::EngineOptions;
using lstmlm::Model;
using namespace lstmlm::tasks;

std::vector<float> logs(std::initializer_list<double> p) {
  std::vector<float> v;
  for (double x : p) v.push_back(static_cast<float>(std::log(x)));
  return v;
}

const double kLn2 = std::log(2.0);

// p = (1/2, 1/4, 1/4), q = (1/4, 1/2, 1/4):
//   KL(p||q) = 1/2 ln((1/2)/(1/4)) + 1/4 ln((1/4)/(1/2)) + 1/4 ln 1 = 1/2 ln 2 - 1/4 ln 2 = ln(2)/4
//   KL(q||p) = 1/4 ln(1/2) + 1/2 ln 2 + 0 = ln(2)/4 as well (the two swap roles).
//   target 0: |ln 1/2 - ln 1/4| = ln 2; target 2: |ln 1/4 - ln 1/4| = 0.
//   argmax p = 0, argmax q = 1: no top-1 agreement.
TEST(FidelityMath, KlDeltaAndAgreementByHand) {
  const auto p = logs({0.5, 0.25, 0.25}), q = logs({0.25, 0.5, 0.25});
  EXPECT_NEAR(kl_divergence(p, q), kLn2 / 4, 1e-7);
  EXPECT_NEAR(kl_divergence(q, p), kLn2 / 4, 1e-7);
  const TokenFidelity t0 = compare_rows(p, q, 0);
  EXPECT_NEAR(t0.kl, kLn2 / 4, 1e-7);
  EXPECT_NEAR(t0.dlogp, kLn2, 1e-7);
  EXPECT_FALSE(t0.top1);
  const TokenFidelity t2 = compare_rows(p, q, 2);
  EXPECT_EQ(t2.dlogp, 0.0);
  // A distribution against itself: every term is p_v * 0, exactly 0.
  EXPECT_EQ(kl_divergence(p, p), 0.0);
  EXPECT_TRUE(compare_rows(p, p, 1).top1);
}

// p = (1, 0, 0) (ln p = 0, -inf, -inf), q = (1/2, 1/4, 1/4): the zero terms add 0 (not NaN),
//   KL(p||q) = 1 * ln(1 / (1/2)) = ln 2; both argmax 0: agreement. KL(q||p) is infinite (q has mass where p
//   has none).
TEST(FidelityMath, ZeroProbabilitiesAndTies) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> p{0.0f, -inf, -inf};
  const auto q = logs({0.5, 0.25, 0.25});
  EXPECT_NEAR(kl_divergence(p, q), kLn2, 1e-7);
  EXPECT_TRUE(compare_rows(p, q, 0).top1);
  EXPECT_EQ(kl_divergence(q, p), inf);
  // Equal maxima go to the lowest id.
  EXPECT_EQ(argmax(logs({0.25, 0.375, 0.375})), 1);
  EXPECT_EQ(argmax(logs({0.5, 0.5})), 0);
  EXPECT_EQ(argmax(std::vector<float>{}), -1);
}

// Two tokens, reference ln p(target) = ln 1/2 and ln 1/4, low ln q(target) = ln 1/4 and ln 1/4:
//   PPL ref = exp((ln 2 + 2 ln 2) / 2) = 2^(3/2) = 2.8284271; PPL low = exp(4 ln 2 / 2) = 4;
//   relative ΔPPL = (4 - 2^(3/2)) / 2^(3/2) = 2^(1/2) - 1 = 0.41421356.
//   KL per token 0.1 and 0.3: mean 0.2; 1 of 2 agreeing: 0.5.
TEST(FidelityMath, PerplexitiesAndMeans) {
  FidelityResult r;
  r.tokens = 2;
  r.top1_agree = 1;
  r.kl_sum = 0.1 + 0.3;
  r.ref.sentences = r.low.sentences = 1;
  r.ref.tokens = r.low.tokens = 2;
  r.ref.logprob = std::log(0.5) + std::log(0.25);
  r.low.logprob = std::log(0.25) + std::log(0.25);
  EXPECT_NEAR(r.perplexity_ref(), std::pow(2.0, 1.5), 1e-12);
  EXPECT_NEAR(r.perplexity_low(), 4.0, 1e-12);
  EXPECT_NEAR(r.relative_delta_ppl(), std::sqrt(2.0) - 1, 1e-12);
  EXPECT_NEAR(r.mean_kl(), 0.2, 1e-15);
  EXPECT_EQ(r.top1_agreement(), 0.5);
  EXPECT_TRUE(std::isnan(FidelityResult{}.mean_kl()));
  EXPECT_TRUE(std::isnan(FidelityResult{}.top1_agreement()));
}

std::filesystem::path bundled(const std::string& name) {
  return lstmlm::test::source_dir() / "models" / name;
}

// The fairytales valid split (400 lines, ~8k tokens) when ../shared/data is there, else a few lines.
std::vector<std::string> text_lines(size_t max_lines = 400) {
  std::vector<std::string> lines;
  std::ifstream f(lstmlm::test::shared_data() / "torch-wlm-fairytales" / "valid.txt");
  for (std::string l; lines.size() < max_lines && std::getline(f, l);) lines.push_back(l);
  if (lines.empty())
    lines = {"once upon a time there was an old man and his wife who lived in a little house .",
             "the old man went to the mountains to cut wood , and the old woman went to the river .",
             "the princess was very beautiful , and the king loved her more than all his treasures .", "",
             "and so they lived happily ever after ."};
  return lines;
}

struct FidelityCase {
  std::string model;
  ContextMode context;
};

const FidelityCase kCases[] = {{"fairytales-word", ContextMode::Sentence},
                               {"fairytales-word", ContextMode::Document},
                               {"charrnn-space", ContextMode::Document},
                               {"charrnn-space", ContextMode::Sentence}};

std::shared_ptr<const Model> load(const std::string& name) { return Model::load(bundled(name).string()); }

EngineOptions engine_options(const std::string& precision, int threads = 2) {
  EngineOptions e;
  e.threads = threads;
  e.row_split_bytes = 0;
  e.precision = lstmlm::parse_precision(precision);
  return e;
}

FidelityResult run(const std::shared_ptr<const Model>& model, Engine& low, ContextMode context,
                   const std::vector<std::string>& lines, int batch = 64, size_t block = 4096) {
  Engine ref(model, engine_options("fp32"));
  ScoreOptions opt;
  opt.context = context;
  opt.batch_size = batch;
  Fidelity f(ref, low, opt);
  for (size_t i = 0; i < lines.size(); i += block) {
    std::vector<std::string> part(lines.begin() + static_cast<ptrdiff_t>(i),
                                  lines.begin() + static_cast<ptrdiff_t>(std::min(lines.size(), i + block)));
    f.add(part, "valid.txt", i + 1);
  }
  return f.result();
}

TEST(FidelityFp32, AgainstItselfIsExactAndScoresLikeScore) {
  const auto lines = text_lines(120);
  for (const FidelityCase& c : kCases) {
    SCOPED_TRACE(c.model + (c.context == ContextMode::Document ? " document" : " sentence"));
    auto model = load(c.model);
    Engine low(model, engine_options("fp32", 1));
    const FidelityResult r = run(model, low, c.context, lines);
    ASSERT_GT(r.tokens, 100);
    EXPECT_EQ(r.kl_sum, 0.0);
    EXPECT_EQ(r.kl_max, 0.0);
    EXPECT_EQ(r.dlogp_max, 0.0);
    EXPECT_EQ(r.top1_agree, r.tokens);
    EXPECT_EQ(r.relative_delta_ppl(), 0.0);
    EXPECT_EQ(r.kernels_ref, r.kernels_low);
    EXPECT_EQ(r.kernels_ref.rfind("fp32/", 0), 0u) << r.kernels_ref;
    // score's summary on the same lines: the same tokens, the same perplexities bit for bit.
    Engine se(model, EngineOptions{.threads = 2, .row_split_bytes = 0});
    ScoreOptions so;
    so.context = c.context;
    Scorer scorer(se, so);
    ScoreSummary s;
    for (const auto& l : scorer.score(lines, "valid.txt", 1)) s.add(l);
    EXPECT_EQ(r.ref.tokens, s.tokens);
    EXPECT_EQ(r.tokens, s.tokens);
    EXPECT_EQ(r.ref.oovs, s.oovs);
    EXPECT_EQ(r.perplexity_ref(), s.perplexity());
    EXPECT_EQ(r.ref.perplexity_excl_oov(), s.perplexity_excl_oov());
    // Batches and blocks change nothing.
    const FidelityResult b = run(model, low, c.context, lines, 3, 17);
    EXPECT_EQ(b.tokens, r.tokens);
    EXPECT_EQ(b.perplexity_ref(), r.perplexity_ref());
    EXPECT_EQ(b.top1_agree, r.top1_agree);
  }
}

TEST(FidelityFp32, RefusesTwoModelsAndMeasures) {
  auto a = load("fairytales-word"), b = load("fairytales-word");
  Engine ea(a, 1), eb(b, 1);
  EXPECT_THROW(Fidelity(ea, eb, ScoreOptions{}), lstmlm::UsageError);
  ScoreOptions o;
  o.entropy = true;
  EXPECT_THROW(Fidelity(ea, ea, o), lstmlm::UsageError);
}

// The acceptance thresholds (docs/precision.md) on the bundled models, at the kernel level the CPU picks.
void check_thresholds(const std::string& precision, double max_rel_dppl, double min_top1,
                      const std::string& only_model = "") {
  const auto lines = text_lines();
  for (const FidelityCase& c : kCases) {
    if (!only_model.empty() && c.model != only_model) continue;
    SCOPED_TRACE(c.model + (c.context == ContextMode::Document ? " document" : " sentence"));
    auto model = load(c.model);
    auto low = std::make_unique<Engine>(model, engine_options(precision));
    const FidelityResult r = run(model, *low, c.context, lines);
    ASSERT_GT(r.tokens, 100);
    EXPECT_EQ(r.kernels_low.rfind(precision + "/", 0), 0u) << r.kernels_low;
    EXPECT_LE(std::fabs(r.relative_delta_ppl()), max_rel_dppl)
        << "PPL fp32 " << r.perplexity_ref() << ", " << precision << " " << r.perplexity_low();
    EXPECT_GE(r.top1_agreement(), min_top1) << r.top1_agree << " of " << r.tokens;
    EXPECT_GE(r.mean_kl(), -1e-6);  // KL of the float distributions: 0 up to rounding, never below
    EXPECT_TRUE(std::isfinite(r.kl_max));
    std::printf("%s %s: tokens %lld, mean KL %.3g, max KL %.3g, top-1 %.4f%%, PPL %.4f -> %.4f (%+.4f%%)\n",
                precision.c_str(), c.model.c_str(), static_cast<long long>(r.tokens), r.mean_kl(), r.kl_max,
                100 * r.top1_agreement(), r.perplexity_ref(), r.perplexity_low(),
                100 * r.relative_delta_ppl());
  }
}

TEST(FidelityThresholds, Bf16WithinHalfPercentPplAnd99PercentTop1) {
  if (lstmlm::kernels_for(lstmlm::Precision::Bf16) == "bf16/refused")
    GTEST_SKIP() << "bf16 is refused on this CPU";
  check_thresholds("bf16", 0.005, 0.99);
}

TEST(FidelityThresholds, Int8WithinTwoPercentPplAnd97PercentTop1) { check_thresholds("int8", 0.02, 0.97); }

}  // namespace
