// The options structs' validate(): the defaults and each range's bounds pass; one past a bound, a NaN or two
// conflicting options throw a UsageError naming the option; the tasks refuse such options before any work.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "lstmlm/tasks/rescore.hpp"
#include "lstmlm/tasks/score.hpp"
#include "micro_model.hpp"

namespace {

using namespace lstmlm;
using namespace lstmlm::tasks;

// The message of the UsageError f throws; fails the test when it throws nothing.
template <class F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.message();
  }
  ADD_FAILURE() << "no UsageError";
  return {};
}

TEST(OptionsValidate, DefaultsAndBoundsPass) {
  ScoreOptions s;
  PredictOptions p;
  tasks::GenerateOptions g;
  EXPECT_NO_THROW(s.validate());
  EXPECT_NO_THROW(p.validate());
  EXPECT_NO_THROW(g.validate());
  s.batch_size = p.batch_size = 1;
  EXPECT_NO_THROW(s.validate());
  EXPECT_NO_THROW(p.validate());
  s.batch_size = p.batch_size = kMaxBatch;
  s.window = p.window = WindowOptions{WindowMode::Pad, kMaxWindowLength};
  EXPECT_NO_THROW(s.validate());
  EXPECT_NO_THROW(p.validate());
  g.max_tokens = 0;
  g.num_samples = kMaxSamples;
  g.sampler.temperature = 0;
  g.sampler.repeat_last_n = -1;
  EXPECT_NO_THROW(g.validate());
  g.max_tokens = kMaxGenerateTokens;
  g.num_samples = 1;
  g.sampler.temperature = static_cast<float>(kMaxTemperature);
  g.sampler.repeat_penalty = static_cast<float>(kMaxRepeatPenalty);
  g.sampler.repeat_last_n = kMaxGenerateTokens;
  g.sampler.top_k = std::numeric_limits<int>::max();  // more than V: the whole vocabulary
  EXPECT_NO_THROW(g.validate());
}

TEST(OptionsValidate, ScoreRefusesEachBadValueNamingTheOption) {
  auto bad = [](auto change) {
    ScoreOptions s;
    change(s);
    return usage_error([&] { s.validate(); });
  };
  EXPECT_EQ(bad([](ScoreOptions& s) { s.batch_size = 0; }), "--batch-size must be in [1, 1000000], got 0");
  EXPECT_EQ(bad([](ScoreOptions& s) { s.batch_size = kMaxBatch + 1; }),
            "--batch-size must be in [1, 1000000], got 1000001");
  EXPECT_EQ(bad([](ScoreOptions& s) {
              s.window = {WindowMode::Window, 0};
            }),
            "--window 0: not in [1, 1000000]");
  EXPECT_EQ(bad([](ScoreOptions& s) {
              s.window = {WindowMode::Pad, kMaxWindowLength + 1};
            }),
            "--pad-to 1000001: not in [1, 1000000]");
  EXPECT_NE(bad([](ScoreOptions& s) {
              s.rank = true;
              s.aggregate = Aggregate::Words;
            }).find("--rank"),
            std::string::npos);
  EXPECT_EQ(bad([](ScoreOptions& s) {
              s.ids_input = true;
              s.normalize = Normalization::Ccnet;
            }),
            "--normalize ccnet: applies to text, not to --ids");
}

TEST(OptionsValidate, PredictRefusesEachBadValueNamingTheOption) {
  PredictOptions p;
  p.batch_size = -3;
  EXPECT_EQ(usage_error([&] { p.validate(); }), "--batch-size must be in [1, 1000000], got -3");
  p.batch_size = 1;
  p.window = {WindowMode::Pad, -1};
  EXPECT_EQ(usage_error([&] { p.validate(); }), "--pad-to -1: not in [1, 1000000]");
}

TEST(OptionsValidate, GenerateRefusesEachBadValueNamingTheOption) {
  auto bad = [](auto change) {
    tasks::GenerateOptions g;
    change(g);
    return usage_error([&] { g.validate(); });
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bad([](tasks::GenerateOptions& g) { g.max_tokens = -1; }),
            "--max-tokens must be in [0, 1000000], got -1");
  EXPECT_EQ(bad([](tasks::GenerateOptions& g) { g.max_tokens = kMaxGenerateTokens + 1; }),
            "--max-tokens must be in [0, 1000000], got 1000001");
  EXPECT_EQ(bad([](tasks::GenerateOptions& g) { g.num_samples = 0; }),
            "--num-samples must be in [1, 100000], got 0");
  EXPECT_EQ(bad([](tasks::GenerateOptions& g) { g.num_samples = kMaxSamples + 1; }),
            "--num-samples must be in [1, 100000], got 100001");
  // The sampler's parameters, each a step past its bound (or not a number).
  struct Case {
    const char* option;
    void (*change)(tasks::SamplerParams&, float, float);
  };
  const Case cases[] = {
      {"--temperature", [](tasks::SamplerParams& p, float, float) { p.temperature = -0.001f; }},
      {"--temperature", [](tasks::SamplerParams& p, float n, float) { p.temperature = n; }},
      {"--temperature", [](tasks::SamplerParams& p, float, float) { p.temperature = 1000.5f; }},
      {"--top-k", [](tasks::SamplerParams& p, float, float) { p.top_k = -1; }},
      {"--top-p", [](tasks::SamplerParams& p, float, float) { p.top_p = 0; }},
      {"--top-p", [](tasks::SamplerParams& p, float, float) { p.top_p = 1.0001f; }},
      {"--top-p", [](tasks::SamplerParams& p, float n, float) { p.top_p = n; }},
      {"--min-p", [](tasks::SamplerParams& p, float, float) { p.min_p = -0.5f; }},
      {"--min-p", [](tasks::SamplerParams& p, float n, float) { p.min_p = n; }},
      {"--repeat-penalty", [](tasks::SamplerParams& p, float, float) { p.repeat_penalty = 0; }},
      {"--repeat-penalty", [](tasks::SamplerParams& p, float, float i) { p.repeat_penalty = i; }},
      {"--repeat-penalty", [](tasks::SamplerParams& p, float, float) { p.repeat_penalty = 1000.5f; }},
      {"--repeat-last-n", [](tasks::SamplerParams& p, float, float) { p.repeat_last_n = -2; }},
      {"--repeat-last-n",
       [](tasks::SamplerParams& p, float, float) { p.repeat_last_n = kMaxGenerateTokens + 1; }},
  };
  for (const auto& c : cases) {
    tasks::GenerateOptions g;
    c.change(g.sampler, nan, inf);
    const std::string m = usage_error([&] { g.validate(); });
    EXPECT_EQ(m.rfind(c.option, 0), 0u) << c.option << ": " << m;
    // The sampler alone refuses it with the same message (a tasks::Sampler validates on construction).
    EXPECT_EQ(usage_error([&] { tasks::Sampler s(g.sampler); }), m);
  }
}

// The tasks validate before they tokenize or run anything.
TEST(OptionsValidate, TasksRefuseBadOptionsBeforeAnyWork) {
  Engine engine(test::micro_model(), 1);
  ScoreOptions s;
  s.batch_size = 0;
  EXPECT_THROW(Scorer(engine, s), UsageError);
  EXPECT_THROW(PrefixScorer(engine, s), UsageError);
  PredictOptions p;
  p.batch_size = 0;
  EXPECT_THROW(predict(engine, {"a b"}, p, "contexts", 1), UsageError);
  tasks::GenerateOptions g;
  g.num_samples = 0;
  EXPECT_THROW(generate(engine, g), UsageError);
}

}  // namespace
