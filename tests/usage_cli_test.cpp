// Usage errors of every subcommand: checked before any output (exit 2, one line `lstmlm: error: ...` on
// stderr, nothing on stdout), readable ranges, did-you-mean suggestions; and the loader's warnings printed
// by every subcommand that loads a model.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "model_files.hpp"
#include "test_util.hpp"

namespace {

using lstmlm::test::run_cli;

std::string word_model() { return (lstmlm::test::source_dir() / "models" / "fairytales-word").string(); }
std::string m() { return "-m '" + word_model() + "'"; }

// Exit 2, nothing on stdout, exactly one stderr line `lstmlm: error: ...` holding every expected piece.
void expect_usage_error(const std::string& args, const std::vector<std::string>& pieces,
                        const std::string& stdin_text = "") {
  auto r = run_cli(args, stdin_text);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
  EXPECT_EQ(r.out, "") << args;
  EXPECT_EQ(r.err.rfind("lstmlm: error: ", 0), 0u) << args << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  for (const auto& p : pieces)
    EXPECT_NE(r.err.find(p), std::string::npos) << args << "\n" << r.err << "lacks: " << p;
}

TEST(UsageCli, AWrongWordNamesTheOptionItsWordsAndTheLikelyOne) {
  // Every option with a word list says the same: never CLI11's "doc not in {sentence,document}".
  expect_usage_error("score " + m() + " -v words",
                     {"--verbosity: 'words' is not one of word, sentence or summary", "did you mean word?"});
  expect_usage_error("score " + m() + " --context doc",
                     {"--context: 'doc' is not one of sentence or document"});
  expect_usage_error("score " + m() + " --units nats",
                     {"--units: 'nats' is not one of default, ln, log10, bits or prob"});
  expect_usage_error("predict " + m() + " --oov eror the",
                     {"--oov: 'eror' is not one of skip or error", "error?"});
  expect_usage_error("rescore " + m() + " --ngram-units cst",
                     {"--ngram-units: 'cst' is not one of log10, ln or cost"});
}

TEST(UsageCli, NegativeTokenCountIsRefusedBeforeThePromptIsPrinted) {
  expect_usage_error("generate " + m() + " -p the -n -1 --seed 1", {"--max-tokens", "-1 is not in [0, "});
}

TEST(UsageCli, NegativeCandidateCountsAreRefusedEverywhere) {
  expect_usage_error("predict " + m() + " --top -1 the", {"--top", "-1 is not in [0, "});
  expect_usage_error("generate " + m() + " --top-k -3 --seed 1", {"--top-k", "-3 is not in [0, "});
  // 0 still means the whole vocabulary / off.
  auto r = run_cli("predict " + m() + " --top 0 --output-format jsonl the");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"top\": ["), std::string::npos);
}

TEST(UsageCli, ThreadCountsAreBoundedInEverySubcommand) {
  for (const std::string& sub : {std::string("score"), std::string("predict"), std::string("generate")}) {
    expect_usage_error(sub + " " + m() + " --threads -1", {"--threads", "-1 is not in [0, 256]"}, "the\n");
    expect_usage_error(sub + " " + m() + " --threads 100000", {"--threads", "100000 is not in [0, 256]"},
                       "the\n");
    expect_usage_error(sub + " " + m() + " --threads 257", {"--threads", "[0, 256]"}, "the\n");
  }
  expect_usage_error("bench " + m() + " -t 1,300", {"-t/--threads", "300 is not in [0, 256]"});
  // The limit itself is accepted.
  auto r = run_cli("score " + m() + " -v summary --threads 256", "the king\n");
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(UsageCli, WindowOptionsAreCheckedOnEverySubcommand) {
  for (std::string cmd : {"score", "predict the", "generate --seed 1"}) {
    expect_usage_error(cmd + " " + m() + " --pad-to -1", {"--pad-to", "-1 is not in [1, 1000000]"});
    expect_usage_error(cmd + " " + m() + " --window 0", {"--window: 0 is not in [1, 1000000]"});
    expect_usage_error(cmd + " " + m() + " --window 1000001", {"--window", "1000001 is not in [1, 1000000]"});
    expect_usage_error(cmd + " " + m() + " --pad-to 3 --stateful", {"--pad-to", "--stateful"});
    expect_usage_error(cmd + " " + m() + " --pad-to 3 --window 3", {"--pad-to", "--window"});
  }
}

TEST(UsageCli, RangesAreWrittenReadably) {
  auto r = run_cli("predict " + m() + " --pad-to 0 the");
  expect_usage_error("predict " + m() + " --pad-to 0 the", {"--pad-to: 0 is not in [1, 1000000]"});
  EXPECT_LT(r.err.size(), 120u) << r.err;
  expect_usage_error("score " + m() + " --batch-size 0", {"--batch-size: 0 is not in [1, 1000000]"});
  expect_usage_error("predict " + m() + " --pad-to x the",
                     {"--pad-to", "'x' is not an integer in [1, 1000000]"});
  expect_usage_error("generate " + m() + " --top-p 0", {"--top-p: 0 is not in (0, 1]"});
  expect_usage_error("generate " + m() + " --temperature -0.5", {"--temperature", "-0.5 is not in [0, "});
  expect_usage_error("generate " + m() + " --num-samples 0", {"--num-samples: 0 is not in [1, "});
  expect_usage_error("generate " + m() + " --seed -1", {"--seed", "[0, 2^64)"});
}

TEST(UsageCli, BenchOptionsAreCheckedBeforeAnyAllocation) {
  const std::string fast = " -r 1 --warmup 0 --min-time 0 -s 2 -w score";
  expect_usage_error("bench --shape 0,8,8,1" + fast, {"--shape V", "0 is not in [1, 268435456]"});
  expect_usage_error("bench --shape 300000000,8,8,1" + fast, {"--shape V", "not in [1, 268435456]"});
  expect_usage_error("bench --shape 10,70000,8,1" + fast, {"--shape E", "70000 is not in [0, 65536]"});
  expect_usage_error("bench --shape 10,8,70000,1" + fast, {"--shape H", "70000 is not in [1, 65536]"});
  expect_usage_error("bench --shape 10,8,8,257" + fast, {"--shape L", "257 is not in [1, 256]"});
  expect_usage_error("bench --shape 10,8,8" + fast, {"--shape expects V,E,H,L"});
  expect_usage_error("bench --shape 10,8,8,1 -b 0", {"-b/--batch-size", "0 is not in [1, 1000000]"});
  expect_usage_error("bench --shape 10,8,8,1 -s -1", {"-s/--seq-len", "-1 is not in [1, 1000000]"});
  expect_usage_error("bench --shape 10,8,8,1 -r 0", {"--repetitions: 0 is not in [1, "});
  expect_usage_error("bench --shape 10,8,8,1 --warmup -1", {"--warmup: -1 is not in [0, "});
  expect_usage_error("bench --shape 10,8,8,1 --min-time -1", {"--min-time: -1 is not in [0, 3600]"});
  expect_usage_error("bench --shape 10,8,8,1 -o xml", {"--output", "xml"});
}

TEST(UsageCli, UnknownOptionsGetADidYouMean) {
  expect_usage_error("generate " + m() + " --temprature 0.5",
                     {"unknown option --temprature; did you mean --temperature?"});
  expect_usage_error("score " + m() + " --verbosty word",
                     {"unknown option --verbosty; did you mean --verbosity?"});
  expect_usage_error("predict " + m() + " --pad 3 the", {"unknown option --pad"});
  auto r = run_cli("score " + m() + " --zzzzzzzz");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown option --zzzzzzzz"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

TEST(UsageCli, UnknownSubcommandNamesTheSubcommands) {
  expect_usage_error("perplexity " + m(), {"unknown subcommand 'perplexity'",
                                           "info, score, predict, rescore, generate, bench, fidelity"});
  expect_usage_error("scroe " + m(), {"unknown subcommand 'scroe'", "did you mean score?"});
  auto r = run_cli("perplexity");
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  expect_usage_error("",
                     {"subcommand is required", "info, score, predict, rescore, generate, bench, fidelity"});
}

TEST(UsageCli, OptionsBeforeTheSubcommandAreShownWhereTheyGo) {
  expect_usage_error(m() + " score", {"after the subcommand", "lstmlm score -m"});
}

TEST(UsageCli, HelpAndVersionStillWork) {
  for (const char* a : {"--help", "--version", "score --help", "generate --help"}) {
    auto r = run_cli(a);
    EXPECT_EQ(r.status, 0) << a << r.err;
    EXPECT_FALSE(r.out.empty()) << a;
  }
}

// A copy of the word model whose vocabulary holds one token twice (id 7 "of" becomes "to").
class DuplicateTokenModel : public ::testing::Test {
 protected:
  void SetUp() override {
    namespace fs = std::filesystem;
    for (const char* f : {"config.json", "weights.safetensors"})
      fs::copy_file(fs::path(word_model()) / f, dir_ / f);
    std::ifstream in(fs::path(word_model()) / "vocab.json");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string v = ss.str();
    auto at = v.find("\"of\"");
    ASSERT_NE(at, std::string::npos);
    v.replace(at, 4, "\"to\"");
    std::ofstream(dir_ / "vocab.json") << v;
  }
  std::string m() const { return "-m '" + dir_.path().string() + "'"; }
  lstmlm::test::TempDir dir_{"dupvocab"};
};

TEST_F(DuplicateTokenModel, EverySubcommandPrintsTheLoaderWarning) {
  const std::string warning = "lstmlm: warning: ";
  for (const std::string& args :
       {"score " + m() + " -v summary", "predict " + m() + " the", "generate " + m() + " -n 2 --seed 1",
        "bench " + m() + " -w score -r 1 --warmup 0 --min-time 0 -s 2", "info " + m()}) {
    auto r = run_cli(args, "the king\n");
    ASSERT_EQ(r.status, 0) << args << "\n" << r.err;
    EXPECT_FALSE(r.out.empty()) << args;
    auto at = r.err.find(warning);
    ASSERT_NE(at, std::string::npos) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("duplicate token", at), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.out.find(warning), std::string::npos) << args;  // stderr only
  }
}

}  // namespace
