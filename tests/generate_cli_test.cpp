// generate against PyTorch (tests/golden/generate_*, tools/make_golden_generate.py) through Model::load, and
// the `lstmlm generate` CLI: text and jsonl output, seeds, exit codes.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "test_util.hpp"

namespace {

using namespace lstmlm;
using lstmlm::test::run_cli;
using lstmlm::test::source_dir;

std::string golden(const std::string& name) { return (source_dir() / "tests" / "golden" / name).string(); }

nlohmann::json expected(const std::string& name) {
  std::ifstream f(golden(name) + "/greedy.json");
  return nlohmann::json::parse(f);
}

void expect_golden_greedy(const std::string& name, int threads) {
  auto e = expected(name);
  auto model = Model::load(golden(name));
  Engine engine(model, threads);
  tasks::GenerateOptions o;
  o.prompt = e["prompt"].get<std::string>();
  o.max_tokens = e["max_tokens"].get<int>();
  o.sampler.temperature = 0;
  auto r = generate(engine, o);
  EXPECT_EQ(r.prompt.context, e["context_ids"].get<std::vector<int32_t>>());
  ASSERT_EQ(r.samples.size(), 1u);
  const auto& s = r.samples[0];
  ASSERT_EQ(s.ids(), e["greedy_ids"].get<std::vector<int32_t>>());
  auto lps = e["logprobs"].get<std::vector<double>>();
  double total = 0;
  for (size_t i = 0; i < lps.size(); ++i) {
    EXPECT_NEAR(s.tokens[i].logprob, lps[i], 1e-4) << "step " << i;
    total += lps[i];
  }
  EXPECT_NEAR(s.total_logprob, total, 1e-3);
  EXPECT_EQ(s.stopped_at_eos, e["stopped_at_eos"].get<bool>());
}

TEST(Generate, GreedyWordModelEqualsPyTorch) { expect_golden_greedy("generate_word", 1); }
TEST(Generate, GreedyCharModelEqualsPyTorch) { expect_golden_greedy("generate_char", 2); }

TEST(Generate, CharPromptLineBreakIsTheNewlineCharacter) {
  auto model = Model::load(golden("generate_char"));  // vocabulary a..j, space, newline (id 11)
  EXPECT_EQ(tasks::prompt_context(*model, "ab\nc").context, (std::vector<int32_t>{0, 1, 11, 2}));
}

// ---- CLI ----

std::string golden_arg(const std::string& name) { return "-m '" + golden(name) + "'"; }

TEST(GenerateCli, GreedyTextIsThePromptThenPyTorchsWords) {
  auto e = expected("generate_word");
  auto model = Model::load(golden("generate_word"));
  std::string want = e["prompt"].get<std::string>();
  for (int32_t id : e["greedy_ids"].get<std::vector<int32_t>>())
    if (!model->tokenizer().is_special(id)) want += " " + model->vocab().token(id);
  auto r = run_cli("generate " + golden_arg("generate_word") + " -p 'the cat sat on' --temperature 0 -n 40");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, want + "\n");
}

TEST(GenerateCli, JsonlHasTokensProbabilitiesAndTotal) {
  auto e = expected("generate_char");
  auto r = run_cli("generate " + golden_arg("generate_char") +
                   " -p 'ab c' --temperature 0 -n 30 --seed 3 --output-format jsonl");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["type"], "sample");  // every jsonl record names its type first: a reader dispatches on it
  EXPECT_EQ(j["sample"], 0);
  EXPECT_EQ(j["seed"], 3);
  EXPECT_EQ(j["prompt"], "ab c");
  std::vector<int32_t> ids;
  double total = 0;
  std::string text;
  for (const auto& t : j["tokens"]) {
    ids.push_back(t["id"].get<int32_t>());
    // Both printed with 9 significant digits, as score and predict print them.
    EXPECT_NEAR(t["prob"].get<double>(), std::exp(t["logprob"].get<double>()),
                1e-8 * t["prob"].get<double>());
    total += t["logprob"].get<double>();
    text += t["token"].get<std::string>();
  }
  EXPECT_EQ(ids, e["greedy_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(j["text"], text);
  EXPECT_NEAR(j["logprob"].get<double>(), total, 1e-6);
  EXPECT_EQ(j["stopped_at_eos"], false);
}

TEST(GenerateCli, SeededSamplesRepeatAcrossThreadsAndSampleCounts) {
  std::string base =
      "generate " + golden_arg("generate_word") + " -p the -n 15 --seed 42 --output-format jsonl";
  auto three = run_cli(base + " --num-samples 3 --threads 1");
  ASSERT_EQ(three.status, 0) << three.err;
  EXPECT_EQ(run_cli(base + " --num-samples 3 --threads 2").out, three.out);
  std::istringstream lines(three.out);
  std::string line;
  std::vector<std::string> samples;
  while (std::getline(lines, line)) samples.push_back(line);
  ASSERT_EQ(samples.size(), 3u);
  auto two = run_cli(base + " --num-samples 2");
  EXPECT_EQ(two.out, samples[0] + "\n" + samples[1] + "\n");
}

TEST(GenerateCli, WithoutSeedPrintsTheSeedThatReproducesTheRun) {
  std::string base = "generate " + golden_arg("generate_char") + " -p ab -n 40";
  auto r = run_cli(base);
  ASSERT_EQ(r.status, 0) << r.err;
  auto pos = r.err.find("seed: ");
  ASSERT_NE(pos, std::string::npos) << r.err;
  std::string seed = r.err.substr(pos + 6, r.err.find('\n', pos) - pos - 6);
  auto again = run_cli(base + " --seed " + seed);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
  EXPECT_EQ(again.err.find("seed: "), std::string::npos);
}

TEST(GenerateCli, SeveralTextSamplesHaveHeaders) {
  auto r = run_cli("generate " + golden_arg("generate_char") + " -p ab -n 5 --seed 1 --num-samples 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("=== sample 0 ===\nab", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n=== sample 1 ===\nab"), std::string::npos) << r.out;
}

TEST(GenerateCli, BadInputAndUsageExitCodes) {
  auto m = golden_arg("generate_char");
  EXPECT_EQ(run_cli("generate " + m + " -p ab --top-p 2").status, 2);
  EXPECT_EQ(run_cli("generate " + m + " -p ab --output-format xml").status, 2);
  EXPECT_EQ(run_cli("generate " + m + " -p ab --seed -5").status, 2);
  // An OOV prompt character without unk: skipped with a warning naming it, refused by --oov error.
  auto skip = run_cli("generate " + m + " -p 'abz' -n 2 --seed 1");
  EXPECT_EQ(skip.status, 0) << skip.err;
  EXPECT_NE(skip.err.find("warning: prompt: 'z'"), std::string::npos) << skip.err;
  auto oov = run_cli("generate " + m + " -p 'abz' --oov error --seed 1");
  EXPECT_EQ(oov.status, 1);
  EXPECT_NE(oov.err.find("'z'"), std::string::npos) << oov.err;
  EXPECT_EQ(oov.out, "");
  EXPECT_EQ(run_cli("generate " + m + " -p ''").status, 1);  // no bos/eos to start from
  EXPECT_EQ(run_cli("generate " + m + " --prompt-file /nonexistent/prompt.txt").status, 1);
}

}  // namespace
