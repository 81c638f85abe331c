// Score task on the hand-built micro model (tests/micro_model.hpp): values from the formulas there.
#include <gtest/gtest.h>

#include <cmath>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/input.hpp"
#include "lstmlm/tasks/score.hpp"
#include "micro_model.hpp"

namespace {

using namespace lstmlm;
using namespace lstmlm::tasks;
using test::A;
using test::B;
using test::E;
using test::micro_logprob;

std::vector<LineScore> run(std::shared_ptr<const Model> m, std::vector<std::string> lines,
                           ScoreOptions o = {}) {
  Engine engine(m, 1);
  Scorer s(engine, o);
  return s.score(lines, "test", 1);
}

TEST(ScoreMicro, SentenceStartsFromEosAndAppendsEos) {
  auto r = run(test::micro_model(), {"a b"});
  ASSERT_EQ(r.size(), 1u);
  const auto& w = r[0].words;
  ASSERT_EQ(w.size(), 3u);                               // a, b, </s>
  EXPECT_NEAR(w[0].logprob, micro_logprob(E, A), 1e-5);  // p(a | </s>) = e^-t / (e^-t + 2)
  EXPECT_NEAR(w[1].logprob, micro_logprob(A, B), 1e-5);  // p(b | a) = 1/3
  EXPECT_NEAR(w[2].logprob, micro_logprob(B, E), 1e-5);  // p(</s> | b) = 1 / (e^t + 2)
  EXPECT_TRUE(w[2].eos);
  EXPECT_EQ(r[0].tokens, 3);
  EXPECT_NEAR(r[0].logprob, micro_logprob(E, A) + micro_logprob(A, B) + micro_logprob(B, E), 1e-5);
}

TEST(ScoreMicro, NoEosNoStartFirstTokenIsContextOnly) {
  auto r = run(test::micro_model(/*with_eos=*/false), {"b a a"});
  const auto& w = r[0].words;
  ASSERT_EQ(w.size(), 3u);
  EXPECT_FALSE(w[0].scored);
  EXPECT_NEAR(w[1].logprob, micro_logprob(B, A), 1e-5);
  EXPECT_NEAR(w[2].logprob, micro_logprob(A, A), 1e-5);
  EXPECT_EQ(r[0].tokens, 2);
}

TEST(ScoreMicro, EmptyLineIsJustEosOrSkipped) {
  auto r = run(test::micro_model(), {"", "a"});
  ASSERT_EQ(r[0].words.size(), 1u);
  EXPECT_NEAR(r[0].logprob, micro_logprob(E, E), 1e-5);  // p(</s> | </s>)
  ScoreOptions o;
  o.skip_empty = true;
  auto s = run(test::micro_model(), {"", "a"}, o);
  EXPECT_TRUE(s[0].skipped);
  EXPECT_TRUE(s[0].words.empty());
  EXPECT_EQ(s[1].line, 2u);
}

TEST(ScoreMicro, DocumentModeCarriesAcrossLines) {
  // With --no-eos the second line's first word is predicted from the first line's last word (b),
  // not from the start token as sentence mode does.
  ScoreOptions o;
  o.context = ContextMode::Document;
  o.append_eos = false;
  auto r = run(test::micro_model(), {"a b", "a"}, o);
  EXPECT_NEAR(r[0].words[0].logprob, micro_logprob(E, A), 1e-5);
  EXPECT_NEAR(r[1].words[0].logprob, micro_logprob(B, A), 1e-5);
  o.context = ContextMode::Sentence;
  auto s = run(test::micro_model(), {"a b", "a"}, o);
  EXPECT_NEAR(s[1].words[0].logprob, micro_logprob(E, A), 1e-5);
}

TEST(ScoreMicro, DocumentModeStateCarriesAcrossCalls) {
  ScoreOptions o;
  o.context = ContextMode::Document;
  Engine engine(test::micro_model(), 1);
  Scorer s(engine, o);
  auto r1 = s.score({"a b"}, "test", 1);
  auto r2 = s.score({"b"}, "test", 2);
  // The previous call ended with </s> (appended), so b is predicted from </s>.
  EXPECT_NEAR(r2[0].words[0].logprob, micro_logprob(E, B), 1e-5);
  EXPECT_NEAR(r2[0].words[1].logprob, micro_logprob(B, E), 1e-5);
}

TEST(ScoreMicro, OovWithUnkCountsAndKenlmPerplexities) {
  // "b" is the unk stand-in: "zz" is scored as b and counted OOV.
  auto r = run(test::micro_model(true, true), {"a zz"});
  const auto& l = r[0];
  EXPECT_EQ(l.oovs, 1);
  EXPECT_EQ(l.oov_tokens, 1);
  EXPECT_TRUE(l.words[1].oov);
  EXPECT_EQ(l.words[1].id, B);
  double a = micro_logprob(E, A), zz = micro_logprob(A, B), e = micro_logprob(B, E);
  ScoreSummary sum;
  sum.add(l);
  // KenLM: incl = exp(-(a + zz + e) / 3); excl = exp(-(a + e) / 2).
  EXPECT_NEAR(sum.perplexity(), std::exp(-(a + zz + e) / 3), 1e-4);
  EXPECT_NEAR(sum.perplexity_excl_oov(), std::exp(-(a + e) / 2), 1e-4);
}

TEST(ScoreMicro, OovWithoutUnkSkippedOrError) {
  auto r = run(test::micro_model(), {"a zz b"});
  const auto& w = r[0].words;
  ASSERT_EQ(w.size(), 4u);
  EXPECT_FALSE(w[1].scored);
  EXPECT_EQ(w[1].id, -1);
  // zz is not fed: b is predicted from a.
  EXPECT_NEAR(w[2].logprob, micro_logprob(A, B), 1e-5);
  EXPECT_EQ(r[0].oovs, 1);
  EXPECT_EQ(r[0].tokens, 3);
  ScoreOptions o;
  o.oov = OovPolicy::Error;
  try {
    run(test::micro_model(), {"a", "a zz"}, o);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("test:2: 'zz'"), std::string::npos) << e.what();
  }
}

TEST(ScoreMicro, IdsInput) {
  ScoreOptions o;
  o.ids_input = true;
  auto r = run(test::micro_model(), {"0 1"}, o);
  EXPECT_EQ(r[0].words[1].token, "b");
  EXPECT_NEAR(r[0].logprob, micro_logprob(E, A) + micro_logprob(A, B) + micro_logprob(B, E), 1e-5);
  EXPECT_THROW(run(test::micro_model(), {"0 3"}, o), InputError);
  EXPECT_THROW(run(test::micro_model(), {"0 x"}, o), InputError);
}

TEST(ScoreMicro, InvalidUtf8NamesLine) {
  try {
    run(test::micro_model(), {"a", "a \xFF"});
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "test:2: invalid UTF-8 at byte 3");
  }
}

}  // namespace

// An input error knows its place as data: the source, the line and the detail, and the message joins them.
TEST(ScoreMicro, InputErrorsCarryTheirPlace) {
  auto m = lstmlm::test::micro_model();
  try {
    lstmlm::tasks::read_tokens(*m, "a \xff b", false, lstmlm::tasks::OovPolicy::Skip, {"in.txt", 7});
    FAIL() << "invalid UTF-8 was accepted";
  } catch (const lstmlm::InputError& e) {
    EXPECT_EQ(e.source(), "in.txt");
    EXPECT_EQ(e.line(), 7u);
    EXPECT_EQ(e.detail(), "invalid UTF-8 at byte 3");
    EXPECT_EQ(e.message(), "in.txt:7: invalid UTF-8 at byte 3");
  }
  const lstmlm::InputError plain("no place");
  EXPECT_EQ(plain.source(), "");
  EXPECT_EQ(plain.line(), 0u);
  EXPECT_EQ(plain.detail(), "no place");
}
