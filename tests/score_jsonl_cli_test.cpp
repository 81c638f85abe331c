// `lstmlm score --input-format jsonl` end to end on the bundled word model: the documents' numbers against
// `score -v sentence --output-format jsonl` on the same text as a file, the bytes kept, errors and
// --on-error, the filter, document mode, the refused combinations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jsonl_records.hpp"
#include "test_util.hpp"

namespace {

using lstmlm::test::run_cli;
namespace fs = std::filesystem;

using lstmlm::test::model_arg;

// A file in a per-process temporary folder (removed at exit, even after a failed ASSERT); returns its path.
std::string write_file(const std::string& name, const std::string& content) {
  static const lstmlm::test::TempDir dir("jsonl");
  fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << content;
  return p.string();
}

using lstmlm::test::split_lines;

struct Totals {
  double logprob = 0;
  int64_t tokens = 0, oovs = 0;
};

// What `score -v sentence --output-format jsonl` gives for `text` as a file, summed over its lines.
Totals score_as_file(const std::string& text, const std::string& opts = "") {
  auto r = run_cli("score " + model_arg() + " -v sentence --output-format jsonl " + opts, text);
  EXPECT_EQ(r.status, 0) << r.err;
  Totals t;
  for (const auto& rec : lstmlm::test::jsonl_records(r.out))
    if (rec["type"] == "line") {
      t.logprob += rec["logprob"].get<double>();
      t.tokens += rec["tokens"].get<int64_t>();
      t.oovs += rec["oovs"].get<int64_t>();
    }
  return t;
}

const std::vector<std::string> kTexts = {
    "once upon a time there was a king", "the queen zzqx said\nand the king",
    "the old man went to the mountains .\nthe princess was very beautiful ."
    "\nand they lived"};

std::string doc(size_t i) {
  std::string t;
  for (char c : kTexts[i]) t += c == '\n' ? std::string("\\n") : std::string(1, c);
  return R"({"id": )" + std::to_string(i) + R"(, "text": ")" + t + R"("})";
}

std::string corpus() {
  std::string s;
  for (size_t i = 0; i < kTexts.size(); ++i) s += doc(i) + "\n";
  return s;
}

TEST(ScoreJsonlCli, NumbersAreThoseOfScoreOnTheSameText) {
  auto r = run_cli("score " + model_arg() + " --input-format jsonl", corpus());
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = split_lines(r.out);
  ASSERT_EQ(out.size(), kTexts.size());
  for (size_t i = 0; i < kTexts.size(); ++i) {
    auto j = nlohmann::json::parse(out[i]);
    EXPECT_EQ(j["id"], i);
    EXPECT_EQ(j["text"], kTexts[i]);
    Totals want = score_as_file(kTexts[i] + "\n");
    EXPECT_NEAR(j["logprob"].get<double>(), want.logprob, 1e-5 * std::max(1.0, std::abs(want.logprob)));
    EXPECT_EQ(j["tokens"], want.tokens);
    EXPECT_EQ(j["oovs"], want.oovs);
    const double ppl = std::exp(-j["logprob"].get<double>() / static_cast<double>(want.tokens));
    EXPECT_NEAR(j["perplexity"].get<double>(), ppl, 1e-6 * ppl);
  }
  EXPECT_GT(nlohmann::json::parse(out[1])["oovs"].get<int>(), 0);
  // One summary line on stderr.
  EXPECT_NE(r.err.find("3 documents, 3 kept, 0 filtered, 0 errors"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(ScoreJsonlCli, TheDocumentsOwnBytesAreKept) {
  const std::string in =
      R"({"z": 1e5, "text": "the king", "a": 1.50, "u": "\u00e9\ud83d\ude00", "n": [1, {}]} )"
      "\t\n"
      R"({"text":"the king"})"
      "\n";
  auto r = run_cli("score " + model_arg() + " --input-format jsonl", in);
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = split_lines(r.out);
  ASSERT_EQ(out.size(), 2u);
  const std::string first =
      R"({"z": 1e5, "text": "the king", "a": 1.50, "u": "\u00e9\ud83d\ude00", "n": [1, {}])";
  ASSERT_EQ(out[0].substr(0, first.size() + 2), first + ", ") << out[0];
  EXPECT_EQ(out[1].substr(0, 20), R"({"text":"the king", )");
  const std::string added = out[0].substr(first.size());
  EXPECT_EQ(added, out[1].substr(18)) << "the same text, the same fields";
  // The fields as %.9g (9 significant digits print back as they read).
  auto j = nlohmann::json::parse(out[0]);
  auto g9 = [](double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return std::string(buf);
  };
  EXPECT_EQ(added, ", \"logprob\": " + g9(j["logprob"].get<double>()) +
                       ", \"tokens\": " + std::to_string(j["tokens"].get<int>()) +
                       ", \"oovs\": 0, \"perplexity\": " + g9(j["perplexity"].get<double>()) + "}");
  EXPECT_EQ(j["z"].dump(), "100000.0");  // the parsed document is the user's, with its values
  EXPECT_EQ(j["u"], "\u00e9\U0001F600");
}

TEST(ScoreJsonlCli, InvalidJsonStopsAfterTheDocumentsBeforeIt) {
  std::string in = corpus() + "{\"text\": \"the king\"\n" + doc(0) + "\n";
  const std::string path = write_file("bad.jsonl", in);
  auto r = run_cli("score " + model_arg() + " --input-format jsonl '" + path + "'");
  EXPECT_EQ(r.status, 1);
  auto good = run_cli("score " + model_arg() + " --input-format jsonl", corpus());
  EXPECT_EQ(r.out, good.out);
  EXPECT_EQ(split_lines(r.out).size(), 3u);
  EXPECT_EQ(r.err.rfind("lstmlm: error: " + path + ":4: invalid JSON at byte ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(ScoreJsonlCli, OnErrorSkipWarnsAndGoesOn) {
  // Errors in several blocks (1024 documents each): each skipped once, every other document once, in order.
  std::string in;
  std::vector<size_t> bad = {3, 1500, 2100};
  const size_t n = 2200;
  for (size_t i = 1; i <= n; ++i) {
    if (std::find(bad.begin(), bad.end(), i) != bad.end())
      in += i == 3 ? "[1, 2]\n" : (i == 1500 ? "{\"text\": 7}\n" : "{\"text\": \"x\", \"oovs\": 0}\n");
    else
      in += "{\"n\": " + std::to_string(i) + ", \"text\": \"the king\"}\n";
  }
  const std::string path = write_file("skip.jsonl", in);
  auto r = run_cli("score " + model_arg() + " --input-format jsonl --on-error skip '" + path + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = split_lines(r.out);
  ASSERT_EQ(out.size(), n - bad.size());
  size_t k = 0;
  for (size_t i = 1; i <= n; ++i) {
    if (std::find(bad.begin(), bad.end(), i) != bad.end()) continue;
    EXPECT_EQ(nlohmann::json::parse(out[k++])["n"], i);
  }
  auto err = split_lines(r.err);
  ASSERT_EQ(err.size(), 4u) << r.err;  // three warnings, the summary
  EXPECT_EQ(err[0].rfind("lstmlm: warning: " + path + ":3: not a JSON object", 0), 0u) << err[0];
  EXPECT_EQ(err[1].rfind("lstmlm: warning: " + path + ":1500: field 'text' is a number, not a string", 0), 0u)
      << err[1];
  EXPECT_EQ(err[2].rfind("lstmlm: warning: " + path + ":2100: field 'oovs' already present", 0), 0u)
      << err[2];
  EXPECT_NE(err[3].find("2200 documents, 2197 kept, 0 filtered, 3 errors"), std::string::npos) << err[3];
  // Under fail, the first bad document stops the run after the two before it.
  auto f = run_cli("score " + model_arg() + " --input-format jsonl '" + path + "'");
  EXPECT_EQ(f.status, 1);
  EXPECT_EQ(split_lines(f.out).size(), 2u);
  EXPECT_EQ(f.err.rfind("lstmlm: error: " + path + ":3: not a JSON object (an array)", 0), 0u) << f.err;
}

TEST(ScoreJsonlCli, BadDocumentsAreOneLineErrors) {
  struct Case {
    std::string line, message;
  };
  const std::vector<Case> cases = {
      {R"({"body": "the king"})", "-:2: no field 'text' in the object"},
      {R"({})", "-:2: no field 'text' in the object"},
      {R"({"text": {"a": 1}})", "-:2: field 'text' is an object, not a string"},
      {R"({"text": "the king", "logprob": -1})", "-:2: field 'logprob' already present"},
      {"{\"text\": \"the \xC3\x28 king\"}", "-:2: invalid JSON at byte "},
      {"", "-:2: invalid JSON at byte 1: "},
      // A NUL byte anywhere is an error of its line, whatever follows it: the bytes after one are neither
      // dropped nor copied into the output.
      {R"({"text": "the king"})" + std::string(1, '\0') + " trailing",
       "-:2: invalid JSON at byte 21: a NUL byte; a line holds one JSON object and nothing else"},
      {R"({"text": "the king"}  )" + std::string(1, '\0'), "-:2: invalid JSON at byte 23: a NUL byte"},
      {std::string(1, '\0') + R"({"text": "the king"})", "-:2: invalid JSON at byte 1: a NUL byte"},
  };
  for (const auto& c : cases) {
    auto r = run_cli("score " + model_arg() + " --input-format jsonl",
                     doc(0) + "\n" + c.line + "\n" + doc(1) + "\n");
    EXPECT_EQ(r.status, 1) << c.line;
    EXPECT_EQ(split_lines(r.out).size(), 1u) << c.line;
    EXPECT_EQ(r.err.rfind("lstmlm: error: " + c.message, 0), 0u) << c.line << " -> " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // --text-field names another field.
  auto r =
      run_cli("score " + model_arg() + " --input-format jsonl --text-field body", R"({"body": "the king"})");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(split_lines(r.out).size(), 1u);
}

TEST(ScoreJsonlCli, FiltersKeepWhatThePerplexitiesSay) {
  auto all = run_cli("score " + model_arg() + " --input-format jsonl", corpus());
  ASSERT_EQ(all.status, 0) << all.err;
  auto out = split_lines(all.out);
  std::vector<double> p;
  for (const auto& l : out) p.push_back(nlohmann::json::parse(l)["perplexity"].get<double>());
  std::vector<double> s = p;
  std::sort(s.begin(), s.end());
  ASSERT_LT(s[0], s[1]);
  ASSERT_LT(s[1], s[2]);
  const double mid = (s[0] + s[1]) / 2, high = (s[1] + s[2]) / 2;
  auto kept = [&](const std::string& opts) {
    auto r = run_cli("score " + model_arg() + " --input-format jsonl " + opts, corpus());
    EXPECT_EQ(r.status, 0) << r.err;
    return std::make_pair(split_lines(r.out), r.err);
  };
  auto expect = [&](const std::string& opts, double lo, double hi) {
    auto [lines, err] = kept(opts);
    std::vector<std::string> want;
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i] >= lo && p[i] <= hi) want.push_back(out[i]);
    EXPECT_EQ(lines, want) << opts;
    const std::string counts =
        std::to_string(want.size()) + " kept, " + std::to_string(p.size() - want.size()) + " filtered";
    EXPECT_NE(err.find(counts), std::string::npos) << err;
  };
  char buf[128];
  std::snprintf(buf, sizeof buf, "--min-perplexity %.17g", mid);
  expect(buf, mid, INFINITY);
  std::snprintf(buf, sizeof buf, "--max-perplexity %.17g", high);
  expect(buf, 0, high);
  std::snprintf(buf, sizeof buf, "--min-perplexity %.17g --max-perplexity %.17g", mid, high);
  expect(buf, mid, high);
  // A document with no scored token (empty text, --no-eos) has perplexity null: kept without bounds only.
  auto none = run_cli("score " + model_arg() + " --input-format jsonl --no-eos", R"({"text": ""})");
  EXPECT_EQ(none.out, "{\"text\": \"\", \"logprob\": 0, \"tokens\": 0, \"oovs\": 0, \"perplexity\": null}\n");
  auto dropped = run_cli("score " + model_arg() + " --input-format jsonl --no-eos --max-perplexity 1e9",
                         R"({"text": ""})");
  EXPECT_EQ(dropped.status, 0);
  EXPECT_EQ(dropped.out, "");
}

TEST(ScoreJsonlCli, DocumentModeScoresEachDocumentAlone) {
  const std::string path = write_file("docs.jsonl", corpus());
  auto r = run_cli("score " + model_arg() + " --input-format jsonl --context document '" + path + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = split_lines(r.out);
  ASSERT_EQ(out.size(), kTexts.size());
  for (size_t i = 0; i < kTexts.size(); ++i) {
    auto alone = run_cli("score " + model_arg() + " --input-format jsonl --context document", doc(i) + "\n");
    EXPECT_EQ(alone.out, out[i] + "\n") << i;
    // As score --context document on the text alone as a file.
    Totals want = score_as_file(kTexts[i] + "\n", "--context document");
    auto j = nlohmann::json::parse(out[i]);
    EXPECT_NEAR(j["logprob"].get<double>(), want.logprob, 1e-5 * std::max(1.0, std::abs(want.logprob)));
    EXPECT_EQ(j["tokens"], want.tokens);
  }
  // A multi-line document is one stream: not the sentence-mode sum.
  auto sentence = split_lines(run_cli("score " + model_arg() + " --input-format jsonl '" + path + "'").out);
  EXPECT_NE(nlohmann::json::parse(out[2])["logprob"], nlohmann::json::parse(sentence[2])["logprob"]);
  EXPECT_EQ(nlohmann::json::parse(out[0])["logprob"], nlohmann::json::parse(sentence[0])["logprob"]);
}

TEST(ScoreJsonlCli, EmptyInput) {
  const std::string path = write_file("empty.jsonl", "");
  auto r = run_cli("score " + model_arg() + " --input-format jsonl '" + path + "'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("0 documents, 0 kept, 0 filtered, 0 errors; 0 tokens"), std::string::npos) << r.err;
}

TEST(ScoreJsonlCli, RefusedCombinationsAreUsageErrors) {
  const std::vector<std::string> refused = {
      "--text-field body",
      "--on-error skip",
      "--min-perplexity 3",
      "--max-perplexity 3",
      "--input-format jsonl -v sentence",
      "--input-format jsonl --output-format jsonl",
      "--input-format jsonl --units bits",
      "--input-format jsonl --entropy",
      "--input-format jsonl --rank",
      "--input-format jsonl --min-perplexity 5 --max-perplexity 4",
      "--input-format jsonl --min-perplexity -1",
      "--input-format jsonl --text-field ''",
      "--input-format jsonl --on-error ignore",
      "--input-format csv",
  };
  for (const auto& opts : refused) {
    auto r = run_cli("score " + model_arg() + " " + opts, corpus());
    EXPECT_EQ(r.status, 2) << opts << ": " << r.err;
    EXPECT_EQ(r.out, "") << opts;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << opts << ": " << r.err;
  }
  auto help = run_cli("score --help");
  EXPECT_NE(help.out.find("--input-format"), std::string::npos);
  EXPECT_NE(help.out.find("JSONL documents"), std::string::npos);
}

}  // namespace
