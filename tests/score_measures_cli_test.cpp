// `lstmlm score --units/--entropy/--rank/--aggregate/--output-format lmzoo` end to end, and the default
// output pinned byte for byte (tests/expected_output/score/, written by the build before these options).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jsonl_records.hpp"
#include "test_util.hpp"

namespace {

using lstmlm::test::run_cli;
using lstmlm::test::source_dir;

using lstmlm::test::model_arg;

using lstmlm::test::kScoreText;
const std::string kCharText = "the cat sat\non  the mat \n";

using lstmlm::test::jsonl_records;

std::vector<std::vector<std::string>> tsv(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    size_t start = 0, tab;
    while ((tab = line.find('\t', start)) != std::string::npos) {
      cells.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    cells.push_back(line.substr(start));
    rows.push_back(cells);
  }
  return rows;
}

std::string expected_output(const std::string& name) {
  std::ifstream f(source_dir() / "tests" / "expected_output" / "score" / name, std::ios::binary);
  EXPECT_TRUE(f) << name;
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(ScoreMeasuresCli, DefaultOutputUnchanged) {
  for (std::string fmt : {"text", "jsonl", "tsv"})
    for (std::string v : {"word", "sentence", "summary"}) {
      auto r = run_cli("score " + model_arg() + " --output-format " + fmt + " -v " + v, kScoreText);
      ASSERT_EQ(r.status, 0) << r.err;
      EXPECT_EQ(r.out, expected_output("word_" + fmt + "_" + v + ".out")) << fmt << " " << v;
    }
  auto r = run_cli("score " + model_arg("charrnn-space"), kCharText);
  EXPECT_EQ(r.out, expected_output("char_text_word.out"));
  r = run_cli("score " + model_arg("charrnn-space") + " --context document --output-format jsonl", kCharText);
  EXPECT_EQ(r.out, expected_output("char_jsonl_document.out"));
}

TEST(ScoreMeasuresCli, UnitsConvertEveryLogprob) {
  auto base = jsonl_records(run_cli("score " + model_arg() + " --output-format jsonl", kScoreText).out);
  auto bits =
      jsonl_records(run_cli("score " + model_arg() + " --output-format jsonl --units bits", kScoreText).out);
  auto ln =
      jsonl_records(run_cli("score " + model_arg() + " --output-format jsonl --units ln", kScoreText).out);
  auto l10 =
      jsonl_records(run_cli("score " + model_arg() + " --output-format jsonl --units log10", kScoreText).out);
  ASSERT_EQ(base.size(), 5u);
  ASSERT_EQ(bits.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const double lp = base[i]["logprob"].get<double>();
    EXPECT_NEAR(bits[i]["surprisal"].get<double>(), -lp / std::log(2.0), 1e-6 * std::abs(lp) + 1e-6);
    EXPECT_FALSE(bits[i].contains("logprob"));
    EXPECT_FALSE(bits[i].contains("log10prob"));
    EXPECT_EQ(ln[i]["logprob"], base[i]["logprob"]);
    EXPECT_FALSE(ln[i].contains("log10prob"));
    EXPECT_EQ(l10[i]["log10prob"], base[i]["log10prob"]);
    EXPECT_FALSE(l10[i].contains("logprob"));
  }
  EXPECT_EQ(bits[4]["perplexity"], base[4]["perplexity"]);  // unit-free
  for (size_t k = 0; k < base[0]["words"].size(); ++k)
    EXPECT_NEAR(bits[0]["words"][k]["surprisal"].get<double>(),
                -base[0]["words"][k]["logprob"].get<double>() / std::log(2.0), 1e-5);
  // text: the word's value and the Total name the unit.
  auto t = run_cli("score " + model_arg() + " --units bits -v word", "once upon\n");
  EXPECT_EQ(t.out.find("logprob"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("Total: surprisal="), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("once=102 10.341"), std::string::npos) << t.out;  // 7.168387 nats / ln 2
  auto h = run_cli("score " + model_arg() + " --units log10 --output-format tsv -v sentence", "once upon\n");
  EXPECT_EQ(h.out.substr(0, h.out.find('\n')), "file\tline\tskipped\ttokens\toovs\tlog10prob");
}

TEST(ScoreMeasuresCli, EntropyAndRankLeaveLogprobsIdentical) {
  auto plain = jsonl_records(run_cli("score " + model_arg() + " --output-format jsonl", kScoreText).out);
  auto r =
      run_cli("score " + model_arg() + " --output-format jsonl --entropy --rank --batch-size 1", kScoreText);
  ASSERT_EQ(r.status, 0) << r.err;
  auto with = jsonl_records(r.out);
  ASSERT_EQ(plain.size(), with.size());
  for (size_t i = 0; i + 1 < plain.size(); ++i) {
    EXPECT_EQ(with[i]["logprob"], plain[i]["logprob"]);
    ASSERT_EQ(with[i]["words"].size(), plain[i]["words"].size());
    for (size_t k = 0; k < plain[i]["words"].size(); ++k) {
      const auto& w = with[i]["words"][k];
      EXPECT_EQ(w["logprob"], plain[i]["words"][k]["logprob"]);
      EXPECT_EQ(w["log10prob"], plain[i]["words"][k]["log10prob"]);
      ASSERT_TRUE(w["entropy"].is_number());
      const double h = w["entropy"].get<double>(), lp = w["logprob"].get<double>();
      EXPECT_GT(h, 0);
      EXPECT_LE(h, std::log(554.0) + 1e-5);  // at most ln V
      const int rank = w["rank"].get<int>();
      EXPECT_GE(rank, 1);
      EXPECT_LE(rank, 554);
      if (rank == 1) {
        EXPECT_GE(lp, -h - 1e-5);  // the first choice's ln p is at least -H (max ln p >= sum p ln p)
      }
    }
  }
  EXPECT_EQ(with.back(), plain.back());
  // Entropy in bits follows --units.
  auto b = jsonl_records(
      run_cli("score " + model_arg() + " --output-format jsonl --entropy --units bits", kScoreText).out);
  EXPECT_NEAR(b[0]["words"][0]["entropy"].get<double>(),
              with[0]["words"][0]["entropy"].get<double>() / std::log(2.0), 1e-5);
  // text and tsv carry them too.
  auto t = run_cli("score " + model_arg() + " --entropy --rank", "once\n");
  EXPECT_NE(t.out.find(" entropy="), std::string::npos) << t.out;
  EXPECT_NE(t.out.find(" rank="), std::string::npos) << t.out;
  auto s = tsv(run_cli("score " + model_arg() + " --entropy --rank --output-format tsv", "once\n").out);
  EXPECT_EQ(s[0], (std::vector<std::string>{"file", "line", "position", "token", "id", "oov", "logprob",
                                            "log10prob", "entropy", "rank"}));
}

TEST(ScoreMeasuresCli, UnscoredTokenHasNoMeasures) {
  // charrnn-space has no bos/eos: the first character of a line is context only.
  auto r = jsonl_records(
      run_cli("score " + model_arg("charrnn-space") + " --output-format jsonl --entropy --rank", "ab\n").out);
  EXPECT_TRUE(r[0]["words"][0]["entropy"].is_null());
  EXPECT_TRUE(r[0]["words"][0]["rank"].is_null());
  EXPECT_TRUE(r[0]["words"][1]["entropy"].is_number());
  auto t = run_cli("score " + model_arg("charrnn-space") + " --entropy --rank", "ab\n");
  EXPECT_EQ(t.out.substr(0, t.out.find('\t')),
            "a=" + t.out.substr(2, t.out.find(' ') - 2) + " context entropy=- rank=-");
}

TEST(ScoreMeasuresCli, LmzooLayout) {
  auto r = run_cli("score " + model_arg() + " --output-format lmzoo", kScoreText);
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = tsv(r.out);
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "sentence_id\ttoken_id\ttoken\tsurprisal");
  auto base = jsonl_records(run_cli("score " + model_arg() + " --output-format jsonl", kScoreText).out);
  size_t row = 1;
  for (size_t i = 0; i < 4; ++i)
    for (size_t k = 0; k < base[i]["words"].size(); ++k, ++row) {
      ASSERT_LT(row, rows.size());
      ASSERT_EQ(rows[row].size(), 4u);
      EXPECT_EQ(rows[row][0], std::to_string(i + 1));
      EXPECT_EQ(rows[row][1], std::to_string(k + 1));
      EXPECT_EQ(rows[row][2], base[i]["words"][k]["token"].get<std::string>());
      EXPECT_NEAR(std::stod(rows[row][3]), -base[i]["words"][k]["logprob"].get<double>() / std::log(2.0),
                  1e-5);
    }
  EXPECT_EQ(row, rows.size());  // no summary row
  EXPECT_EQ(rows[10],
            (std::vector<std::string>{"2", "1", "<eos>", rows[10][3]}));  // line 2 is empty: just eos
  // The measures come after lm-zoo's four columns; an unscored token has an empty surprisal.
  auto m = tsv(
      run_cli("score " + model_arg("charrnn-space") + " --output-format lmzoo --entropy --rank", "ab\n").out);
  EXPECT_EQ(m[0],
            (std::vector<std::string>{"sentence_id", "token_id", "token", "surprisal", "entropy", "rank"}));
  EXPECT_EQ(m[1], (std::vector<std::string>{"1", "1", "a", "", "", ""}));
  auto w = tsv(
      run_cli("score " + model_arg("charrnn-space") + " --output-format lmzoo --aggregate words", "the cat\n")
          .out);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[2][2], "cat");
}

TEST(ScoreMeasuresCli, AggregateWordsOnCharModel) {
  auto chars = jsonl_records(
      run_cli("score " + model_arg("charrnn-space") + " --output-format jsonl --context document", kCharText)
          .out);
  auto r = run_cli(
      "score " + model_arg("charrnn-space") + " --output-format jsonl --context document --aggregate words",
      kCharText);
  ASSERT_EQ(r.status, 0) << r.err;
  auto words = jsonl_records(r.out);
  ASSERT_EQ(words.size(), 3u);
  std::vector<std::string> toks;
  for (const auto& w : words[1]["words"]) toks.push_back(w["token"]);
  EXPECT_EQ(toks, (std::vector<std::string>{"on", "the", "mat"}));
  EXPECT_FALSE(words[1]["words"][0].contains("id"));
  // "on" = o n + both spaces; "mat" = m a t + the trailing space + the "\n" of document mode.
  const auto& c = chars[1]["words"];
  EXPECT_NEAR(words[1]["words"][0]["logprob"].get<double>(),
              c[0]["logprob"].get<double>() + c[1]["logprob"].get<double>() + c[2]["logprob"].get<double>() +
                  c[3]["logprob"].get<double>(),
              1e-5);
  EXPECT_NEAR(words[1]["words"][2]["logprob"].get<double>(),
              c[8]["logprob"].get<double>() + c[9]["logprob"].get<double>() + c[10]["logprob"].get<double>() +
                  c[11]["logprob"].get<double>() + c[12]["logprob"].get<double>(),
              1e-5);
  EXPECT_EQ(words[1]["logprob"], chars[1]["logprob"]);  // totals stay per character
  EXPECT_EQ(words[2], chars[2]);                        // and so does the summary
  auto t = run_cli("score " + model_arg("charrnn-space") + " --aggregate words", "the cat\n");
  EXPECT_EQ(t.out.substr(0, 12), "the context\t") << t.out;  // no id; its first character is context only
}

TEST(ScoreMeasuresCli, BadCombinationsAreUsageErrors) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {model_arg() + " --aggregate words", "--aggregate words"},
      {model_arg("charrnn-space") + " --aggregate words --rank", "--rank"},
      {model_arg() + " --entropy -v sentence", "--entropy"},
      {model_arg() + " --rank -v summary", "--rank"},
      {model_arg("charrnn-space") + " --aggregate words -v sentence", "--aggregate"},
      {model_arg() + " --output-format lmzoo -v sentence", "lmzoo"},
      {model_arg() + " --output-format lmzoo --units ln", "--units"},
      {model_arg() + " --units nats", "--units"},
      {model_arg() + " --aggregate letters", "--aggregate"},
  };
  for (const auto& [args, names] : bad) {
    auto r = run_cli("score " + args, "the cat\n");
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(names), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}

}  // namespace
