// generate on random models: reproducibility across runs, thread counts and batch positions, eos handling,
// prompts, reported log-probabilities. Golden PyTorch and CLI tests: generate_cli_test.cpp.
#include "lstmlm/tasks/generate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"

namespace {

using namespace lstmlm;

std::vector<std::vector<int32_t>> all_ids(const tasks::GenerateResult& r) {
  std::vector<std::vector<int32_t>> v;
  for (const auto& s : r.samples) v.push_back(s.ids());
  return v;
}

// A random word model (vocabulary t0..t{V-1}) with t0 as its eos token, made more likely by `eos_bias`,
// so sampled sequences end at different lengths.
std::shared_ptr<const Model> model_with_eos(float eos_bias) {
  auto base = Model::random(40, 8, 16, 2, 3);
  ModelConfig c = base->config();
  c.tokenizer.eos_token = "t0";
  Weights w = base->weights();
  w.decoder_bias[0] += eos_bias;
  return Model::create(c, base->vocab(), w);
}

tasks::GenerateOptions sampling(const std::string& prompt, int n, int k, uint64_t seed) {
  tasks::GenerateOptions o;
  o.prompt = prompt;
  o.max_tokens = n;
  o.num_samples = k;
  o.seed = seed;
  return o;
}

TEST(Generate, SamplesAreReproducibleAcrossRunsThreadsAndBatchPositions) {
  auto model = Model::random(50, 8, 16, 2, 11);
  Engine one(model, 1), two(model, EngineOptions{.threads = 2, .row_split_bytes = 0});
  auto o = sampling("t1 t2 t3", 25, 5, 123);
  o.sampler.top_k = 20;
  auto a = all_ids(generate(one, o));
  EXPECT_EQ(a, all_ids(generate(one, o)));  // same run again
  EXPECT_EQ(a, all_ids(generate(two, o)));  // other thread count
  // Sample i of a batch of K equals sample i of a batch of i + 1 (it is then last, alone at its position).
  for (int i = 0; i < 5; ++i) {
    auto oi = o;
    oi.num_samples = i + 1;
    EXPECT_EQ(all_ids(generate(one, oi)).back(), a[static_cast<size_t>(i)]) << "sample " << i;
  }
  // The streams differ: 5 samples of 25 tokens from 50 words do not coincide.
  EXPECT_NE(a[0], a[1]);
  o.seed = 124;
  EXPECT_NE(all_ids(generate(one, o))[0], a[0]);
}

// The same contract at the low precisions, at the kernel level the CPU picks (tests/engine_precision_test.cpp
// runs every level): a seed gives the same samples on 1 and 2 threads and at every batch position.
TEST(Generate, LowPrecisionSamplesAreReproducibleAcrossThreadsAndBatchPositions) {
  auto model = Model::random(300, 16, 64, 2, 12);
  for (const char* precision : {"bf16", "int8"}) {
    if (lstmlm::kernels_for(lstmlm::parse_precision(precision)).ends_with("/refused"))
      continue;  // bf16 on an AVX2-only CPU
    SCOPED_TRACE(precision);
    EngineOptions e1, e2;
    e1.precision = e2.precision = lstmlm::parse_precision(precision);
    e1.threads = 1;
    e2.threads = 2;
    e2.column_split_bytes = 0;  // a single sample then splits its columns across the two threads
    e2.row_split_bytes = 0;     // and a batch its rows
    Engine one(model, e1), two(model, e2);
    auto o = sampling("t1 t2", 20, 4, 77);
    const auto a = all_ids(generate(one, o));
    EXPECT_EQ(a, all_ids(generate(two, o)));
    for (int i = 0; i < 4; ++i) {
      auto oi = o;
      oi.num_samples = i + 1;
      EXPECT_EQ(all_ids(generate(two, oi)).back(), a[static_cast<size_t>(i)]) << "sample " << i;
    }
  }
}

TEST(Generate, FinishedSamplesLeaveTheBatchWithoutDisturbingOthers) {
  auto model = model_with_eos(2.5f);
  Engine engine(model, EngineOptions{.threads = 2, .row_split_bytes = 0});
  auto o = sampling("t5 t6", 30, 6, 9);
  auto r = generate(engine, o);
  size_t stopped = 0, lengths_seen = 0;
  std::vector<size_t> lengths;
  for (const auto& s : r.samples) {
    auto ids = s.ids();
    // eos ends a sample: it is the last token, never an earlier one.
    for (size_t j = 0; j + 1 < ids.size(); ++j) EXPECT_NE(ids[j], 0) << "sample " << s.index;
    EXPECT_EQ(s.stopped_at_eos, !ids.empty() && ids.back() == 0);
    if (!s.stopped_at_eos) {
      EXPECT_EQ(ids.size(), 30u);
    }
    stopped += s.stopped_at_eos;
    lengths.push_back(ids.size());
    double total = 0;
    for (const auto& t : s.tokens) total += t.logprob;
    EXPECT_DOUBLE_EQ(s.total_logprob, total);
  }
  std::sort(lengths.begin(), lengths.end());
  lengths_seen = static_cast<size_t>(std::unique(lengths.begin(), lengths.end()) - lengths.begin());
  ASSERT_GE(stopped, 2u) << "the eos bias should end several samples early";
  ASSERT_GE(lengths_seen, 2u) << "samples should end at different steps";
  for (int i = 0; i < 6; ++i) {
    auto oi = o;
    oi.num_samples = i + 1;
    EXPECT_EQ(all_ids(generate(engine, oi)).back(), r.samples[static_cast<size_t>(i)].ids())
        << "sample " << i;
  }
  o.stop_at_eos = false;
  for (const auto& s : generate(engine, o).samples) EXPECT_EQ(s.tokens.size(), 30u);
}

TEST(Generate, ReportedLogprobsAreTheModelsBeforeSamplerTransforms) {
  auto model = Model::random(30, 8, 16, 1, 5);
  Engine engine(model, 1);
  auto o = sampling("t3 t4", 12, 1, 77);
  o.sampler.temperature = 0.3f;
  o.sampler.top_k = 3;
  o.sampler.repeat_penalty = 1.5f;
  auto r = generate(engine, o);
  auto gen = r.samples[0].ids();
  // Score context + generated with the engine: the log-probabilities of the generated tokens must match.
  std::vector<int32_t> in = r.prompt.context, tgt(r.prompt.context.begin() + 1, r.prompt.context.end());
  in.insert(in.end(), gen.begin(), gen.end() - 1);
  tgt.insert(tgt.end(), gen.begin(), gen.end());
  std::vector<State> st{State::zeros(*model)};
  std::vector<std::vector<float>> out;
  engine.score({in}, {tgt}, st, out);
  const size_t off = r.prompt.context.size() - 1;
  for (size_t i = 0; i < gen.size(); ++i) EXPECT_NEAR(r.samples[0].tokens[i].logprob, out[0][off + i], 1e-5);
}

TEST(Generate, PromptContextStartsFromBosElseEos) {
  auto with_eos = model_with_eos(0);
  auto p = tasks::prompt_context(*with_eos, "");
  EXPECT_EQ(p.context, (std::vector<int32_t>{0}));  // eos, no prompt tokens
  p = tasks::prompt_context(*with_eos, "t4 t5\nt6");
  EXPECT_EQ(p.context, (std::vector<int32_t>{0, 4, 5, 0, 6}));  // a line break is eos in a word model
  auto plain = Model::random(10, 4, 8, 1, 1);                   // no bos, eos or unk
  EXPECT_EQ(tasks::prompt_context(*plain, "t1 t2").context, (std::vector<int32_t>{1, 2}));
  EXPECT_THROW(tasks::prompt_context(*plain, ""), InputError);
  // An OOV word without unk follows score's rule: skipped (named in Prompt::skipped), or refused.
  auto skipped = tasks::prompt_context(*plain, "t1 nosuchword");
  EXPECT_EQ(skipped.context, (std::vector<int32_t>{1}));
  EXPECT_EQ(skipped.skipped, (std::vector<std::string>{"nosuchword"}));
  try {
    tasks::prompt_context(*plain, "t1 nosuchword", tasks::OovPolicy::Error);
    FAIL() << "an OOV word without unk must be an error under --oov error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nosuchword"), std::string::npos) << e.what();
  }
}

TEST(Generate, OovPromptWordsMapToUnk) {
  auto base = Model::random(10, 4, 8, 1, 1);
  ModelConfig c = base->config();
  c.tokenizer.unk_token = "t9";
  auto model = Model::create(c, base->vocab(), base->weights());
  auto p = tasks::prompt_context(*model, "t1 zebra");
  EXPECT_EQ(p.context, (std::vector<int32_t>{1, 9}));
  EXPECT_TRUE(p.tokens[1].oov);
}

TEST(Generate, RejectsBadCounts) {
  auto model = Model::random(10, 4, 8, 1, 1);
  Engine engine(model, 1);
  auto o = sampling("t1", -1, 1, 1);
  EXPECT_THROW(generate(engine, o), UsageError);
  o = sampling("t1", 5, 0, 1);
  EXPECT_THROW(generate(engine, o), UsageError);
  o = sampling("t1", 0, 2, 1);
  auto r = generate(engine, o);
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_TRUE(r.samples[0].tokens.empty());
}

}  // namespace
