// A char model whose vocabulary holds "\n" reads it between lines in document mode, as in training: the
// micro model as a char model {a, b, \n} (tests/micro_model.hpp), values from its formulas.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "lstmlm/tasks/score.hpp"
#include "micro_model.hpp"
#include "test_util.hpp"

namespace {

using namespace lstmlm;
using namespace lstmlm::tasks;
using test::A;
using test::B;
using test::micro_logprob;
using test::NL;

std::vector<LineScore> run(std::shared_ptr<const Model> m, std::vector<std::string> lines, ContextMode ctx,
                           bool append_eos = true, std::vector<LineEnd> ends = {}) {
  Engine engine(m, 1);
  ScoreOptions o;
  o.context = ctx;
  o.append_eos = append_eos;
  Scorer s(engine, o);
  return s.score(lines, "test", 1, ends);
}

auto char_model(bool with_eos = false) { return test::micro_model(with_eos, false, /*char_newline=*/true); }

TEST(ScoreNewline, DocumentModeFeedsAndScoresNewlineBetweenLines) {
  // The stream is the text "ab\nba\n\n": no eos, no bos, so the first 'a' is context only.
  auto r = run(char_model(), {"ab", "ba", ""}, ContextMode::Document);
  ASSERT_EQ(r.size(), 3u);
  ASSERT_EQ(r[0].words.size(), 3u);
  EXPECT_FALSE(r[0].words[0].scored);
  EXPECT_NEAR(r[0].words[1].logprob, micro_logprob(A, B), 1e-5);
  EXPECT_EQ(r[0].words[2].token, "\n");
  EXPECT_EQ(r[0].words[2].id, NL);
  EXPECT_TRUE(r[0].words[2].eos);
  EXPECT_TRUE(r[0].words[2].scored);
  EXPECT_NEAR(r[0].words[2].logprob, micro_logprob(B, NL), 1e-5);
  EXPECT_EQ(r[0].tokens, 2);
  // The next line is predicted from the "\n", as char-rnn saw it in training.
  ASSERT_EQ(r[1].words.size(), 3u);
  EXPECT_NEAR(r[1].words[0].logprob, micro_logprob(NL, B), 1e-5);
  EXPECT_NEAR(r[1].words[1].logprob, micro_logprob(B, A), 1e-5);
  EXPECT_NEAR(r[1].words[2].logprob, micro_logprob(A, NL), 1e-5);
  // An empty line is its "\n" alone.
  ASSERT_EQ(r[2].words.size(), 1u);
  EXPECT_NEAR(r[2].logprob, micro_logprob(NL, NL), 1e-5);
}

TEST(ScoreNewline, NoEosJoinsLinesAndSentenceModeAppendsNothing) {
  auto d = run(char_model(), {"ab", "ba"}, ContextMode::Document, /*append_eos=*/false);
  ASSERT_EQ(d[1].words.size(), 2u);
  EXPECT_NEAR(d[1].words[0].logprob, micro_logprob(B, B), 1e-5);  // after the first line's 'b'
  auto s = run(char_model(), {"ab", "ba"}, ContextMode::Sentence);
  ASSERT_EQ(s[1].words.size(), 2u);  // no "\n": a line of sentence mode ends with eos or nothing
  EXPECT_FALSE(s[1].words[0].scored);
  EXPECT_NEAR(s[1].words[1].logprob, micro_logprob(B, A), 1e-5);
}

TEST(ScoreNewline, NewlineReplacesEosInDocumentModeOnly) {
  // eos_token "b" stands for a configured eos: document mode ends lines with "\n", sentence mode with eos.
  auto d = run(char_model(/*with_eos=*/true), {"a"}, ContextMode::Document);
  ASSERT_EQ(d[0].words.size(), 2u);
  EXPECT_NEAR(d[0].words[0].logprob, micro_logprob(B, A), 1e-5);  // predicted from the start token (eos)
  EXPECT_EQ(d[0].words[1].id, NL);
  auto s = run(char_model(/*with_eos=*/true), {"a"}, ContextMode::Sentence);
  ASSERT_EQ(s[0].words.size(), 2u);
  EXPECT_EQ(s[0].words[1].id, B);
  EXPECT_TRUE(s[0].words[1].eos);
}

TEST(ScoreNewline, WordModelsKeepEosInDocumentMode) {
  auto r = run(test::micro_model(), {"a"}, ContextMode::Document);
  ASSERT_EQ(r[0].words.size(), 2u);
  EXPECT_EQ(r[0].words[1].token, "</s>");
}

TEST(ScoreNewline, TheFilesLineEndIsFed) {
  // A last line without a line break feeds nothing after it (the file "ab\nba" is 4 characters + 1 "\n");
  // a CRLF on a vocabulary without "\r" is the "\n" alone (such a model never saw a "\r").
  auto r = run(char_model(), {"ab", "ba"}, ContextMode::Document, true, {LineEnd::CrLf, LineEnd::None});
  ASSERT_EQ(r[0].words.size(), 3u);
  EXPECT_EQ(r[0].words[2].id, NL);
  EXPECT_NEAR(r[0].words[2].logprob, micro_logprob(B, NL), 1e-5);
  ASSERT_EQ(r[1].words.size(), 2u);
  EXPECT_NEAR(r[1].logprob, micro_logprob(NL, B) + micro_logprob(B, A), 1e-5);
  // Sentence mode and word models append their eos whatever the line end was.
  auto s = run(char_model(/*with_eos=*/true), {"a"}, ContextMode::Sentence, true, {LineEnd::None});
  ASSERT_EQ(s[0].words.size(), 2u);
  EXPECT_TRUE(s[0].words[1].eos);
  auto w = run(test::micro_model(), {"a"}, ContextMode::Document, true, {LineEnd::None});
  ASSERT_EQ(w[0].words.size(), 2u);
  EXPECT_EQ(w[0].words[1].token, "</s>");
}

// charrnn-space (trained on CRLF text, its vocabulary has "\r" = 16 and "\n" = 12): a CRLF file in
// document mode must give the stream of its bytes, which --ids feeds by hand on one line with --no-eos.
TEST(ScoreNewlineCli, CrlfFeedsCarriageReturnThenNewlineOnACharModel) {
  using lstmlm::test::run_cli;
  const std::string model = "-m '" + (lstmlm::test::source_dir() / "models" / "charrnn-space").string() + "'";
  auto text =
      run_cli("score " + model + " --context document -v word --output-format jsonl", "ab\r\nba\r\nb");
  ASSERT_EQ(text.status, 0) << text.err;
  // Ids of a, b (from vocab.json: "a" 3, "b" 23), then \r 16, \n 12.
  auto ids = run_cli("score " + model + " --context document --no-eos --ids -v word --output-format jsonl",
                     "3 23 16 12 23 3 16 12 23\n");
  ASSERT_EQ(ids.status, 0) << ids.err;
  std::vector<std::string> tokens;
  std::vector<double> by_text, by_ids;
  std::istringstream t(text.out), i(ids.out);
  for (std::string line; std::getline(t, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.value("type", "") != "line") continue;
    for (const auto& w : j["words"]) {
      tokens.push_back(w["token"]);
      if (!w["logprob"].is_null()) by_text.push_back(w["logprob"]);
    }
  }
  for (std::string line; std::getline(i, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.value("type", "") != "line") continue;
    for (const auto& w : j["words"])
      if (!w["logprob"].is_null()) by_ids.push_back(w["logprob"]);
  }
  EXPECT_EQ(tokens, (std::vector<std::string>{"a", "b", "\r", "\n", "b", "a", "\r", "\n", "b"}));
  ASSERT_EQ(by_text.size(), 8u);  // the first "a" is context only
  ASSERT_EQ(by_ids.size(), by_text.size());
  for (size_t k = 0; k < by_ids.size(); ++k) EXPECT_EQ(by_text[k], by_ids[k]) << k;
}

}  // namespace
