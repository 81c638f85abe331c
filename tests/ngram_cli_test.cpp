// `lstmlm score -m FILE.arpa`: KenLM's query layout with KenLM's numbers, every output format, and the
// refusals of what an n-gram model cannot do.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace lstmlm {
namespace {

std::string arpa_arg() {
  return "-m '" + (test::shared_data() / "kenlm-test-arpa" / "test.arpa").string() + "'";
}

class ArpaScoreCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::shared_data() / "kenlm-test-arpa" / "test.arpa"))
      GTEST_SKIP() << "no ../shared/data/kenlm-test-arpa";
  }
};

// "word=id length log10p" fields, as KenLM's query prints them.
struct QueryField {
  std::string word;
  int id, length;
  double log10prob;
};
std::vector<QueryField> query_fields(const std::string& line) {
  std::vector<QueryField> out;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, '\t');) {
    if (f.starts_with("Total:")) break;
    QueryField q;
    const size_t eq = f.rfind('=');
    q.word = f.substr(0, eq);
    std::istringstream rest(f.substr(eq + 1));
    rest >> q.id >> q.length >> q.log10prob;
    out.push_back(q);
  }
  return out;
}

TEST_F(ArpaScoreCli, KenlmLayoutGivesKenlmsScoresLengthsAndIds) {
  auto r = test::run_cli("score " + arpa_arg() + " --output-format kenlm", "looking on a little more loin\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = test::split_lines(r.out);
  ASSERT_GE(lines.size(), 1u);
  const auto q = query_fields(lines[0]);
  // KenLM's lm/model_test.cc (../shared/data/kenlm-test-arpa/SOURCE.md); </s> after "more loin" is the
  // bigram "loin </s>" of test.arpa. Ids: <unk> is 0, the other unigrams follow in the file's order.
  const std::vector<QueryField> want = {{"looking", 23, 2, -0.4846522}, {"on", 25, 3, -0.348837},
                                        {"a", 5, 4, -0.0155266},        {"little", 20, 5, -0.00306122},
                                        {"more", 24, 5, -0.00181395},   {"loin", 21, 5, -0.0432557},
                                        {"</s>", 3, 2, -0.6708385}};
  ASSERT_EQ(q.size(), want.size()) << lines[0];
  double total = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(q[i].word, want[i].word);
    EXPECT_EQ(q[i].id, want[i].id) << want[i].word;
    EXPECT_EQ(q[i].length, want[i].length) << want[i].word;
    EXPECT_NEAR(q[i].log10prob, want[i].log10prob, 1e-6) << want[i].word;
    total += q[i].log10prob;
  }
  EXPECT_NE(lines[0].find("Total: "), std::string::npos);
  EXPECT_NEAR(std::stod(lines[0].substr(lines[0].find("Total: ") + 7)), total, 1e-6);
}

TEST_F(ArpaScoreCli, WithoutTheStartTokenTheFirstWordComesFromTheNullContext) {
  auto r = test::run_cli("score " + arpa_arg() + " --output-format kenlm --no-bos --no-eos", "also would\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto q = query_fields(test::split_lines(r.out).at(0));
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].length, 1);
  EXPECT_NEAR(q[0].log10prob, -1.687872, 1e-6);
  EXPECT_EQ(q[1].length, 2);
  EXPECT_NEAR(q[1].log10prob, -2, 1e-6);
}

TEST_F(ArpaScoreCli, EveryOutputFormatWritesTheSameNumbers) {
  const std::string text = "looking on a little the biarritz not_found more .\n\nwould consider higher\n";
  auto j = test::run_cli("score " + arpa_arg() + " --output-format jsonl --units log10", text);
  ASSERT_EQ(j.status, 0) << j.err;
  double sum = 0;
  int oovs = 0;
  for (const auto& line : test::split_lines(j.out)) {
    auto rec = nlohmann::json::parse(line);
    if (rec["type"] == "line") {
      double words = 0;
      for (const auto& w : rec["words"]) words += w["log10prob"].get<double>();
      EXPECT_NEAR(words, rec["log10prob"].get<double>(), 1e-6);
      sum += rec["log10prob"].get<double>();
      oovs += rec["oovs"].get<int>();
    } else {
      EXPECT_NEAR(rec["log10prob"].get<double>(), sum, 1e-6);
      EXPECT_EQ(oovs, 1);
      EXPECT_EQ(rec["tokens"].get<int>(), 10 + 1 + 4);  // the empty line is </s> alone
    }
  }
  for (const char* f : {"text", "tsv", "lmzoo", "kenlm", "srilm"}) {  // the formats score writes
    auto r = test::run_cli("score " + arpa_arg() + " --output-format " + f, text);
    EXPECT_EQ(r.status, 0) << f << ": " << r.err;
    EXPECT_FALSE(r.out.empty()) << f;
  }
}

TEST_F(ArpaScoreCli, WhatAnNgramModelCannotDoIsRefusedNamingTheOption) {
  for (const char* opt : {"--entropy", "--rank", "--ids", "--pad-to 3", "--aggregate words"}) {
    auto r = test::run_cli("score " + arpa_arg() + " " + opt, "a b\n");
    EXPECT_EQ(r.status, 2) << opt << ": " << r.err;
    const std::string name = std::string(opt).substr(0, std::string(opt).find(' '));
    EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
  }
  // A command that needs a neural model says so (predict and generate take an ARPA model too).
  auto p = test::run_cli("rescore " + arpa_arg() + " --input-format jsonl", "");
  EXPECT_EQ(p.status, 2);
  EXPECT_NE(p.err.find("an ARPA n-gram model"), std::string::npos) << p.err;
  auto e = test::run_cli("score " + arpa_arg() + " --oov error", "looking zzz\n");
  EXPECT_EQ(e.status, 1);
  EXPECT_NE(e.err.find("-:1: 'zzz' is not among"), std::string::npos) << e.err;
}

TEST_F(ArpaScoreCli, InfoDescribesTheModel) {
  auto t = test::run_cli("info " + arpa_arg());
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("(ARPA n-gram model, order 5)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("N-grams: 1=37 2=47 3=11 4=6 5=4 (105 in all)"), std::string::npos) << t.out;
  auto j = test::run_cli("info --json " + arpa_arg());
  ASSERT_EQ(j.status, 0) << j.err;
  auto info = nlohmann::json::parse(j.out);
  EXPECT_EQ(info["type"], "arpa");
  EXPECT_EQ(info["order"], 5);
  EXPECT_EQ(info["counts"], nlohmann::json::array({37, 47, 11, 6, 4}));
  EXPECT_EQ(info["vocab_size"], 37);
  EXPECT_EQ(info["unk_added"], false);
  EXPECT_GT(info["memory_bytes"].get<int64_t>(), 0);
}

TEST(ArpaScoreCliFiles, ABrokenArpaFileIsOneLineNamingFileAndLineAndWritesNothing) {
  test::TempDir dir("arpa_cli");
  const std::string path = (dir / "cut.arpa").string();
  std::ofstream(path) << "\\data\\\nngram 1=3\n\n\\1-grams:\n-1\t<s>\n-1\t</s>\n";
  auto r = test::run_cli("score -m '" + path + "'", "a\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(test::count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(path + ": line 6: "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lstmlm
