// A char model whose vocabulary holds "\n" reads it between lines in document mode (issue 14): the
// micro model as a char model {a, b, \n} (tests/micro_model.hpp), values from its formulas.
#include <gtest/gtest.h>

#include "lstmlm/tasks/score.hpp"
#include "micro_model.hpp"

namespace {

using namespace lstmlm;
using namespace lstmlm::tasks;
using test::micro_logprob;
constexpr int A = 0, B = 1, NL = 2;  // token ids: a, b, \n

std::vector<LineScore> run(std::shared_ptr<const Model> m, std::vector<std::string> lines, ContextMode ctx,
                           bool append_eos = true) {
  Engine engine(m, 1);
  ScoreOptions o;
  o.context = ctx;
  o.append_eos = append_eos;
  Scorer s(engine, o);
  return s.score(lines, "test", 1);
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

}  // namespace
