// tasks::JsonlScorer (lstmlm/tasks/jsonl.hpp): documents scored as Scorer scores their lines, the input's
// bytes kept, one error per bad document, the perplexity filter.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "lstmlm/error.hpp"
#include "lstmlm/report/jsonl.hpp"
#include "lstmlm/tasks/jsonl.hpp"
#include "lstmlm/tasks/score.hpp"
#include "micro_model.hpp"
#include "test_util.hpp"

namespace {

using namespace lstmlm;
using namespace lstmlm::tasks;
using Status = JsonlDocument::Status;

// A document's result with the line the filter writes for it (report::jsonl_document), as the CLI writes it.
struct Scored : JsonlDocument {
  std::string line;
};

template <class Scorer>
std::vector<Scored> scored(Scorer&& js, const std::vector<std::string>& lines, const std::string& source,
                           uint64_t first) {
  std::vector<Scored> out;
  for (auto& d : js.score(lines, source, first)) out.push_back(Scored{d, {}});
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].status != Status::Error) out[i].line = report::jsonl_document(lines[i], out[i]);
  return out;
}

std::shared_ptr<const Model> fairytales() {
  static auto m = Model::load((test::source_dir() / "models" / "fairytales-word").string());
  return m;
}

// The totals Scorer gives for `lines` (a fresh scorer: document mode from the start state), summed as
// ScoreSummary does.
ScoreSummary scorer_totals(Engine& e, const std::vector<std::string>& lines, ScoreOptions o = {},
                           const std::vector<LineEnd>& ends = {}) {
  Scorer s(e, o);
  ScoreSummary sum;
  for (const auto& l : s.score(lines, "x", 1, ends)) sum.add(l);
  return sum;
}

std::string num9(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string fields(const ScoreSummary& s) {
  return "\"logprob\": " + num9(s.logprob) + ", \"tokens\": " + std::to_string(s.tokens) +
         ", \"oovs\": " + std::to_string(s.oovs) + ", \"perplexity\": " + num9(s.perplexity()) + "}";
}

TEST(ScoreJsonl, TotalsAreTheSumsOfScorerLinesAndBytesAreKept) {
  Engine e(fairytales(), 1);
  JsonlScorer js(e, {});
  const std::string doc =
      R"({"z": 1e5, "w": 1.50, "u": "\u00e9\n", "text": "once upon a time\nthe queen zzqx said", "n": null}  )";
  auto r = scored(js, {doc}, "in.jsonl", 1);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].status, Status::Kept) << r[0].error;
  ScoreSummary want = scorer_totals(e, {"once upon a time", "the queen zzqx said"});
  EXPECT_EQ(r[0].total.logprob, want.logprob);
  EXPECT_EQ(r[0].total.tokens, want.tokens);
  EXPECT_EQ(r[0].total.oovs, want.oovs);
  EXPECT_EQ(r[0].total.oovs, 2);  // queen and zzqx (docs/scoring.md)
  EXPECT_EQ(r[0].total.line, 1u);
  EXPECT_TRUE(r[0].total.words.empty());
  EXPECT_DOUBLE_EQ(r[0].perplexity, std::exp(-want.logprob / static_cast<double>(want.tokens)));
  // The input's own bytes (key order, 1e5, 1.50, the \u escape), trailing spaces gone, the fields added.
  const std::string kept = doc.substr(0, doc.find_last_of('}'));
  EXPECT_EQ(r[0].line, kept + ", " + fields(want));
  auto j = nlohmann::json::parse(r[0].line);
  EXPECT_EQ(j["tokens"], want.tokens);
  EXPECT_NEAR(j["logprob"].get<double>(), want.logprob, 1e-6);
}

TEST(ScoreJsonl, TextIsReadAsAFile) {
  Engine e(fairytales(), 1);
  JsonlScorer js(e, {});
  auto r = scored(js,
                  {R"({"text": "the king\r\nthe queen\n"})", R"({"text": "the king\nthe queen"})",
                   R"({"text": "the king\n\nthe queen"})"},
                  "-", 1);
  for (const auto& d : r) ASSERT_EQ(d.status, Status::Kept) << d.error;
  // CRLF is a line end; a final "\n" ends the last line and makes no empty one.
  EXPECT_EQ(r[0].total.logprob, r[1].total.logprob);
  EXPECT_EQ(r[0].total.tokens, r[1].total.tokens);
  // An empty line in the middle is a line (just eos, as score scores it).
  ScoreSummary three = scorer_totals(e, {"the king", "", "the queen"});
  EXPECT_EQ(r[2].total.logprob, three.logprob);
  EXPECT_EQ(r[2].total.tokens, r[1].total.tokens + 1);
}

TEST(ScoreJsonl, EmptyTextHasNoTokenAndIsFilteredOnlyUnderABound) {
  Engine e(fairytales(), 1);
  const std::vector<std::string> docs{R"({"text": ""})", R"({"text": "the king"})"};
  auto r = scored(JsonlScorer(e, {}), docs, "-", 1);
  ASSERT_EQ(r[0].status, Status::Kept);
  EXPECT_EQ(r[0].total.tokens, 0);
  EXPECT_TRUE(std::isnan(r[0].perplexity));
  EXPECT_EQ(r[0].line, R"({"text": "", "logprob": 0, "tokens": 0, "oovs": 0, "perplexity": null})");
  JsonlOptions o;
  o.max_perplexity = std::numeric_limits<double>::max();
  auto f = scored(JsonlScorer(e, o), docs, "-", 1);
  EXPECT_EQ(f[0].status, Status::Filtered);
  EXPECT_EQ(f[1].status, Status::Kept);
}

TEST(ScoreJsonl, FilterKeepsMinToMaxInclusive) {
  Engine e(fairytales(), 1);
  const std::vector<std::string> docs{R"({"text": "once upon a time there was a king"})",
                                      R"({"text": "zzqx qqq the the the"})", R"({"text": "the king said"})"};
  auto all = scored(JsonlScorer(e, {}), docs, "-", 1);
  std::vector<double> p;
  for (const auto& d : all) {
    ASSERT_EQ(d.status, Status::Kept);
    p.push_back(d.perplexity);
  }
  std::vector<double> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_LT(sorted[0], sorted[1]);
  ASSERT_LT(sorted[1], sorted[2]);
  JsonlOptions o;
  o.min_perplexity = sorted[1];  // bounds are inclusive: the middle one is kept by both
  o.max_perplexity = sorted[1];
  auto mid = scored(JsonlScorer(e, o), docs, "-", 1);
  o.max_perplexity.reset();
  auto high = scored(JsonlScorer(e, o), docs, "-", 1);
  for (size_t i = 0; i < docs.size(); ++i) {
    EXPECT_EQ(mid[i].status == Status::Kept, p[i] == sorted[1]) << i;
    EXPECT_EQ(high[i].status == Status::Kept, p[i] >= sorted[1]) << i;
    EXPECT_EQ(mid[i].perplexity, p[i]);  // a filtered document still has its numbers and its line
    EXPECT_EQ(mid[i].line, all[i].line);
  }
}

TEST(ScoreJsonl, BadDocumentsAreErrorsOfTheirOwnLine) {
  Engine e(fairytales(), 1);
  JsonlOptions o;
  o.score.batch_size = 2;
  JsonlScorer js(e, o);
  const std::vector<std::string> docs{
      R"({"text": "the king"})",
      R"({"text": "the king)",
      R"({})",
      R"({"body": "the king"})",
      R"({"text": ["the king"]})",
      R"({"text": null})",
      R"("the king")",
      R"({"text": "the king", "perplexity": 3})",
      "{\"text\": \"the \xFF king\"}",
      R"({"text": "the king"} x)",
      "",
      R"({"text": "the queen", "meta": {"logprob": 1, "text": 5}})",
  };
  auto r = scored(js, docs, "in.jsonl", 10);
  ASSERT_EQ(r.size(), docs.size());
  auto error = [&](size_t i) {
    EXPECT_EQ(r[i].status, Status::Error) << i << ": " << r[i].line;
    EXPECT_EQ(r[i].error.rfind("in.jsonl:" + std::to_string(10 + i) + ": ", 0), 0u) << r[i].error;
    EXPECT_EQ(r[i].error.find('\n'), std::string::npos);
    return r[i].error;
  };
  EXPECT_EQ(r[0].status, Status::Kept);
  EXPECT_NE(error(1).find("invalid JSON at byte "), std::string::npos);
  EXPECT_NE(error(2).find("no field 'text'"), std::string::npos);
  EXPECT_NE(error(3).find("no field 'text'"), std::string::npos);
  EXPECT_NE(error(4).find("field 'text' is an array, not a string"), std::string::npos);
  EXPECT_NE(error(5).find("field 'text' is null, not a string"), std::string::npos);
  EXPECT_NE(error(6).find("not a JSON object (a string)"), std::string::npos);
  EXPECT_NE(error(7).find("field 'perplexity' already present"), std::string::npos);
  const std::string utf8 = error(8);
  EXPECT_NE(utf8.find("invalid JSON at byte 15"), std::string::npos) << utf8;
  EXPECT_NE(utf8.find("UTF-8"), std::string::npos) << utf8;
  EXPECT_EQ(utf8.find('\xFF'), std::string::npos) << "the raw byte is escaped: " << utf8;
  EXPECT_NE(error(9).find("invalid JSON at byte "), std::string::npos);
  EXPECT_NE(error(10).find("invalid JSON at byte 1"), std::string::npos);
  // Keys of nested objects are no conflict, and the text field is the top-level one.
  ASSERT_EQ(r[11].status, Status::Kept) << r[11].error;
  ScoreSummary queen = scorer_totals(e, {"the queen"});
  EXPECT_EQ(r[11].total.logprob, queen.logprob);
  // The good documents have the numbers they have alone.
  auto alone = scored(js, {docs[0]}, "in.jsonl", 1);
  EXPECT_EQ(r[0].line, alone[0].line);
}

TEST(ScoreJsonl, OovErrorIsTheDocumentsOwnAndNamesTheTextLine) {
  Engine e(test::micro_model(/*with_eos=*/true, /*with_unk=*/false), 1);
  JsonlOptions o;
  o.score.oov = OovPolicy::Error;
  JsonlScorer js(e, o);
  auto r = scored(js, {R"({"text": "a b"})", R"({"text": "a\nb zz"})", R"({"text": "b a"})"}, "m", 1);
  EXPECT_EQ(r[0].status, Status::Kept);
  EXPECT_EQ(r[2].status, Status::Kept);
  ASSERT_EQ(r[1].status, Status::Error);
  EXPECT_NE(r[1].error.find("m:2: field 'text', line 2 of its text: 'zz' is not in the vocabulary"),
            std::string::npos)
      << r[1].error;
  // By hand (tests/micro_model.hpp): p(a|</s>) p(b|a) p(</s>|b).
  using test::micro_logprob;
  EXPECT_NEAR(r[0].total.logprob, micro_logprob(2, 0) + micro_logprob(0, 1) + micro_logprob(1, 2), 1e-5);
  // Under the default policy the OOV is skipped and counted.
  auto skip = scored(JsonlScorer(e, {}), {R"({"text": "a\nb zz"})"}, "m", 1);
  ASSERT_EQ(skip[0].status, Status::Kept);
  EXPECT_EQ(skip[0].total.oovs, 1);
}

TEST(ScoreJsonl, DocumentModeIsOneStreamPerDocument) {
  Engine e(fairytales(), 1);
  JsonlOptions o;
  o.score.context = ContextMode::Document;
  const std::vector<std::string> docs{R"({"text": "once upon a time\nthere was a king"})",
                                      R"({"text": "the queen said\nand the king"})",
                                      R"({"text": "the old man"})"};
  JsonlScorer js(e, o);
  auto together = scored(js, docs, "-", 1);
  for (size_t i = 0; i < docs.size(); ++i) {
    auto alone = scored(JsonlScorer(e, o), {docs[i]}, "-", 1);
    ASSERT_EQ(together[i].status, Status::Kept);
    EXPECT_EQ(together[i].line, alone[0].line) << i;
    EXPECT_EQ(together[i].total.logprob, alone[0].total.logprob) << i;
  }
  // The second document is the stream of its own lines (not a continuation of the first) ...
  ScoreSummary second =
      scorer_totals(e, {"the queen said", "and the king"}, o.score, {LineEnd::Lf, LineEnd::None});
  EXPECT_EQ(together[1].total.logprob, second.logprob);
  // ... and differs from sentence mode, where each line starts again.
  ScoreSummary sentences = scorer_totals(e, {"the queen said", "and the king"});
  EXPECT_NE(together[1].total.logprob, sentences.logprob);
  // Reversing the order of the documents changes no number.
  auto reversed = scored(js, {docs[2], docs[1], docs[0]}, "-", 1);
  EXPECT_EQ(reversed[2].line, together[0].line);
  EXPECT_EQ(reversed[0].line, together[2].line);
}

TEST(ScoreJsonl, SentenceModeNumbersDoNotDependOnTheBatch) {
  Engine e(fairytales(), 2);
  std::vector<std::string> docs;
  for (int i = 0; i < 30; ++i)
    docs.push_back(R"({"i": )" + std::to_string(i) + R"(, "text": ")" + std::string(i % 5, 'x') +
                   " the king went to the " + (i % 2 ? "mountains" : "sea\\nand the queen") + R"("})");
  JsonlOptions one;
  one.score.batch_size = 1;
  auto a = scored(JsonlScorer(e, one), docs, "-", 1);
  auto b = scored(JsonlScorer(e, {}), docs, "-", 1);
  for (size_t i = 0; i < docs.size(); ++i) {
    ASSERT_EQ(a[i].status, Status::Kept);
    EXPECT_EQ(a[i].line, b[i].line) << i;
    auto alone = scored(JsonlScorer(e, {}), {docs[i]}, "-", 1);
    EXPECT_EQ(alone[0].line, b[i].line) << i;
  }
}

TEST(ScoreJsonl, CustomTextFieldAndEmptyBlock) {
  Engine e(fairytales(), 1);
  JsonlOptions o;
  o.text_field = "body";
  JsonlScorer js(e, o);
  auto r = scored(js, {R"({"text": 1, "body": "the king"})"}, "-", 1);
  ASSERT_EQ(r[0].status, Status::Kept) << r[0].error;
  EXPECT_EQ(r[0].total.logprob, scorer_totals(e, {"the king"}).logprob);
  EXPECT_TRUE(scored(js, {}, "-", 1).empty());
}

TEST(ScoreJsonl, RefusedOptions) {
  Engine e(fairytales(), 1);
  JsonlOptions empty;
  empty.text_field = "";
  EXPECT_THROW(JsonlScorer(e, empty), UsageError);
  JsonlOptions bounds;
  bounds.min_perplexity = 10;
  bounds.max_perplexity = 5;
  EXPECT_THROW(JsonlScorer(e, bounds), UsageError);
  JsonlOptions nan;
  nan.min_perplexity = std::nan("");
  EXPECT_THROW(JsonlScorer(e, nan), UsageError);
  JsonlOptions entropy;
  entropy.score.entropy = true;
  EXPECT_THROW(JsonlScorer(e, entropy), UsageError);
}

TEST(ScoreJsonl, DeepNestingAndWindowsAreHandled) {
  Engine e(fairytales(), 1);
  // No DOM is built: a deeply nested value next to the text costs its bytes only.
  const std::string deep =
      R"({"text": "the king", "x": )" + std::string(200000, '[') + std::string(200000, ']') + "}";
  auto r = scored(JsonlScorer(e, {}), {deep, std::string(200000, '[')}, "-", 1);
  ASSERT_EQ(r[0].status, Status::Kept) << r[0].error;
  EXPECT_EQ(r[0].total.logprob, scorer_totals(e, {"the king"}).logprob);
  EXPECT_EQ(r[1].status, Status::Error);
  // A window is the Scorer's, in both modes.
  for (ContextMode mode : {ContextMode::Sentence, ContextMode::Document}) {
    JsonlOptions o;
    o.score.context = mode;
    o.score.window = WindowOptions{WindowMode::Window, 2};
    auto w = scored(JsonlScorer(e, o), {R"({"text": "once upon a time\nthere was a king"})"}, "-", 1);
    ASSERT_EQ(w[0].status, Status::Kept) << w[0].error;
    EXPECT_EQ(w[0].total.logprob, scorer_totals(e, {"once upon a time", "there was a king"}, o.score,
                                                {LineEnd::Lf, LineEnd::None})
                                      .logprob);
  }
}

}  // namespace
