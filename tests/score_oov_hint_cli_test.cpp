// A cased text against a lowercase-only vocabulary on a model without unk_token and without lowercasing
// (a guessed conversion that forgot --lowercase): score skips the capitalised words as OOVs, as
// it must, and says once, on stderr, how to fix the conversion.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model_files.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using lstmlm::test::run_cli;

// fairytales-word (its vocabulary has no uppercase letter) without its unk_token and its lowercasing.
class ScoreOovHintCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path original = lstmlm::test::source_dir() / "models" / "fairytales-word";
    for (const char* f : {"config.json", "vocab.json", "weights.safetensors"})
      fs::copy_file(original / f, dir_.path() / f, fs::copy_options::overwrite_existing);
    std::ifstream in(dir_.path() / "config.json");
    nlohmann::json c = nlohmann::json::parse(in);
    c["tokenizer"]["unk_token"] = nullptr;
    c["tokenizer"]["lowercase"] = false;
    std::ofstream(dir_.path() / "config.json") << c.dump(2);
  }
  std::string m() const { return "-m '" + dir_.path().string() + "'"; }
  lstmlm::test::TempDir dir_{"oov_hint_cli"};
};

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = 0; (at = s.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

TEST_F(ScoreOovHintCli, CapitalisedWordsGetOneWarningSayingTheFix) {
  auto r = run_cli("score " + m() + " -v summary", "once upon a time\nThe King said\nthe Queen\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count(r.err, "reconvert with lstmlm-convert --lowercase"), 1) << r.err;
  EXPECT_NE(r.err.find("-:2: 'The' is not in the vocabulary"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("OOVs:\t3"), std::string::npos) << r.out;  // The, King, Queen: still skipped
}

TEST_F(ScoreOovHintCli, LowercaseOovsAndCasedModelsGetNoHint) {
  auto lower = run_cli("score " + m() + " -v summary", "the zzqx said\n");
  ASSERT_EQ(lower.status, 0) << lower.err;
  EXPECT_EQ(count(lower.err, "--lowercase"), 0) << lower.err;
  // The bundled model lowercases and has an unk token: "The" is "the".
  auto bundled = run_cli(
      "score -m '" + (lstmlm::test::source_dir() / "models" / "fairytales-word").string() + "' -v summary",
      "The King said\n");
  ASSERT_EQ(bundled.status, 0) << bundled.err;
  EXPECT_EQ(count(bundled.err, "--lowercase"), 0) << bundled.err;
}

TEST_F(ScoreOovHintCli, OovErrorCarriesTheHint) {
  auto r = run_cli("score " + m() + " --oov error", "The king\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("'The' is not in the vocabulary"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reconvert with lstmlm-convert --lowercase"), std::string::npos) << r.err;
}

}  // namespace
