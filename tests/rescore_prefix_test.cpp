// PrefixScorer and Rescorer (docs/rescoring.md). The reference for every log-prob is Scorer, which the
// score tests check against float64 references: prefix sharing must give its numbers bit for bit. The
// combination and interpolation are checked against formulas written out here in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/rescore.hpp"
#include "lstmlm/tasks/score.hpp"
#include "micro_model.hpp"
#include "test_util.hpp"

namespace {

using namespace lstmlm;
using namespace lstmlm::tasks;

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_identical(const std::vector<LineScore>& want, const std::vector<LineScore>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("line " + std::to_string(i));
    ASSERT_EQ(want[i].words.size(), got[i].words.size());
    for (size_t k = 0; k < want[i].words.size(); ++k) {
      EXPECT_EQ(want[i].words[k].id, got[i].words[k].id);
      EXPECT_EQ(want[i].words[k].scored, got[i].words[k].scored);
      EXPECT_TRUE(same_bits(want[i].words[k].logprob, got[i].words[k].logprob)) << "word " << k;
    }
    EXPECT_EQ(want[i].tokens, got[i].tokens);
    EXPECT_EQ(want[i].oovs, got[i].oovs);
    EXPECT_EQ(want[i].logprob, got[i].logprob);  // summed in the same order: the same double
  }
}

// N-best-like lines over the vocabulary "t0".."t{V-1}": bases with perturbed endings, exact duplicates, a
// prefix of another line, an empty line and an out-of-vocabulary word.
std::vector<std::string> nbest_lines(int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto word = [&] { return "t" + std::to_string(rng() % uint64_t(vocab)); };
  std::vector<std::string> lines;
  for (int s = 0; s < 12; ++s) {
    std::vector<std::string> base;
    for (int k = 0, n = 3 + int(rng() % 12); k < n; ++k) base.push_back(word());
    for (int h = 0; h < 15; ++h) {
      auto words = base;
      for (size_t k = words.size() - 1 - rng() % std::min<size_t>(3, words.size()); k < words.size(); ++k)
        if (rng() % 2) words[k] = word();
      if (h % 5 == 4) words.resize(words.size() - 1);
      std::string line;
      for (const auto& w : words) line += (line.empty() ? "" : " ") + w;
      lines.push_back(line);
    }
    lines.push_back(lines.back());
  }
  lines.push_back("");
  lines.push_back("t1 nosuchword t2");
  return lines;
}

std::vector<LineScore> by_scorer(Engine& e, const std::vector<std::string>& lines, ScoreOptions o) {
  Scorer s(e, o);
  return s.score(lines, "test", 1);
}

std::vector<uint64_t> numbers(size_t n) {
  std::vector<uint64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i + 1;
  return v;
}

TEST(PrefixScorer, EqualsScorerBitForBitOnRandomModels) {
  for (int layers : {1, 2}) {
    auto m = Model::random(40, 8, 24, layers, 7 + uint64_t(layers));  // no bos/eos: first token is context
    Engine e(m, 1);
    auto lines = nbest_lines(40, uint64_t(layers));
    auto want = by_scorer(e, lines, {});
    for (int bs : {1, 3, 64}) {
      SCOPED_TRACE("layers " + std::to_string(layers) + " batch " + std::to_string(bs));
      ScoreOptions o;
      o.batch_size = bs;
      PrefixScorer p(e, o);
      expect_identical(want, p.score(lines, numbers(lines.size()), "test", p.sentence_start()));
      EXPECT_LT(p.stats().computed, p.stats().steps / 2);  // the shared prefixes ran once
    }
  }
}

TEST(PrefixScorer, EqualsScorerOnTheBundledWordModelWithTwoThreads) {
  auto m = Model::load((test::source_dir() / "models" / "fairytales-word").string());
  Engine e(m, 2);
  std::vector<std::string> lines = {"once upon a time there was a king",
                                    "once upon a time there was a queen",
                                    "once upon a time there was",
                                    "once upon a time there lived a king",
                                    "once upon a time there lived a king",
                                    "",
                                    "the king",
                                    "once upon a time there was a zzyzx"};
  for (bool eos : {true, false}) {
    ScoreOptions o;
    o.append_eos = eos;
    PrefixScorer p(e, o);
    expect_identical(by_scorer(e, lines, o),
                     p.score(lines, numbers(lines.size()), "test", p.sentence_start()));
  }
}

// Conversation context: each line from where the previous one left off is document mode over the lines.
TEST(PrefixScorer, AfterContinuesTheStreamAsDocumentMode) {
  for (bool with_start : {true, false}) {
    auto m = with_start ? Model::load((test::source_dir() / "models" / "fairytales-word").string())
                        : Model::random(40, 8, 24, 2, 3);
    Engine e(m, 1);
    std::vector<std::string> lines = with_start
                                         ? std::vector<std::string>{"the king", "", "a queen came", "and"}
                                         : std::vector<std::string>{"t1 t2 t3", "t4", "", "t5 t6"};
    ScoreOptions doc;
    doc.context = ContextMode::Document;
    auto want = by_scorer(e, lines, doc);
    PrefixScorer p(e, {});
    StreamStart at = p.sentence_start();
    std::vector<LineScore> got;
    for (size_t i = 0; i < lines.size(); ++i) {
      auto one = p.score({lines[i]}, {i + 1}, "test", at);
      at = p.after(at, one[0]);
      got.push_back(one[0]);
    }
    expect_identical(want, got);
  }
}

Hypothesis hyp(std::string utt, int64_t n, std::string text, std::vector<std::vector<double>> scores = {}) {
  Hypothesis h;
  h.id = utt + "-" + std::to_string(n);
  h.utt = std::move(utt);
  h.n = n;
  h.text = std::move(text);
  h.line = uint64_t(n);
  h.scores = std::move(scores);
  return h;
}

TEST(Rescorer, CombinationWordPenaltyAndBestByHand) {
  auto m = test::micro_model();  // V = {a, b, </s>}; ln p from micro_logprob
  Engine e(m, 1);
  RescoreOptions o;
  o.weights = {-0.5, 0.0};
  o.lm_weight = 2.0;
  o.word_penalty = 0.25;
  Rescorer r(e, o);
  std::vector<Hypothesis> hs = {hyp("u1", 1, "a b", {{10.0}, {99.0}}), hyp("u1", 2, "b", {{1.0}, {0.0}}),
                                hyp("u2", 1, "", {{0.0}, {0.0}})};
  auto s = r.rescore(hs, "nbest");
  using test::micro_logprob;
  const int A = 0, B = 1, E = 2;
  const double lm1 = micro_logprob(E, A) + micro_logprob(A, B) + micro_logprob(B, E);
  const double lm2 = micro_logprob(E, B) + micro_logprob(B, E);
  const double lm3 = micro_logprob(E, E);                                // the empty hypothesis is just eos
  EXPECT_NEAR(s[0].combined, -0.5 * 10.0 + 2.0 * lm1 + 0.25 * 2, 1e-5);  // score 2 has weight 0
  EXPECT_NEAR(s[1].combined, -0.5 * 1.0 + 2.0 * lm2 + 0.25 * 1, 1e-5);
  EXPECT_NEAR(s[2].combined, 2.0 * lm3, 1e-5);
  EXPECT_EQ(s[0].words, 2);
  EXPECT_EQ(s[2].words, 0);
  EXPECT_EQ(s[2].lm.tokens, 1);
  EXPECT_FALSE(s[0].best);  // -5 + ... < -0.5 + ...
  EXPECT_TRUE(s[1].best);
  EXPECT_TRUE(s[2].best);  // an utterance with one hypothesis
}

TEST(Rescorer, TieGoesToTheFirstAndNanNeverWins) {
  auto m = test::micro_model();
  Engine e(m, 1);
  RescoreOptions o;
  o.weights = {1.0};
  Rescorer r(e, o);
  const double nan = std::nan("");
  auto s = r.rescore({hyp("u", 1, "a", {{nan}}), hyp("u", 2, "a", {{0.0}}), hyp("u", 3, "a", {{0.0}})}, "x");
  EXPECT_FALSE(s[0].best);
  EXPECT_TRUE(s[1].best);
  EXPECT_FALSE(s[2].best);
}

TEST(Rescorer, InterpolationPerSentenceAndPerTokenByHand) {
  auto m = test::micro_model();
  Engine e(m, 1);
  using test::micro_logprob;
  const int A = 0, B = 1, E = 2;
  const double p1 = micro_logprob(E, A), p2 = micro_logprob(A, B), p3 = micro_logprob(B, E);
  const double lambda = 0.3;
  {
    RescoreOptions o;
    o.weights = {0.0};
    o.interpolate = Interpolation{lambda, 0, LogUnits::Log10};
    Rescorer r(e, o);
    auto s = r.rescore({hyp("u", 1, "a b", {{-2.0}})}, "x");  // n-gram: log10 p = -2 for the sentence
    const double want = std::log(lambda * std::exp(p1 + p2 + p3) + (1 - lambda) * 0.01);
    EXPECT_NEAR(s[0].lm_logprob, want, 1e-6);
    EXPECT_NEAR(s[0].combined, want, 1e-6);
    EXPECT_NEAR(s[0].lm.logprob, p1 + p2 + p3, 1e-6);  // the LSTM's own score is kept
  }
  {
    RescoreOptions o;
    o.weights = {0.0};
    o.interpolate = Interpolation{lambda, 0, LogUnits::Cost};
    Rescorer r(e, o);
    auto s = r.rescore({hyp("u", 1, "a b", {{1.0, 2.0, 3.0}})}, "x");  // costs = -ln q per token
    double want = 0;
    const double lp[3] = {p1, p2, p3};
    for (int t = 0; t < 3; ++t)
      want += std::log(lambda * std::exp(lp[t]) + (1 - lambda) * std::exp(-(t + 1.0)));
    EXPECT_NEAR(s[0].lm_logprob, want, 1e-6);
    try {
      r.rescore({hyp("u", 7, "a b", {{1.0, 2.0}})}, "nbest.txt");
      FAIL() << "a per-token list of the wrong length was accepted";
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find("nbest.txt:7: the n-gram score has 2 per-token values"),
                std::string::npos)
          << err.what();
    }
  }
  {
    RescoreOptions o;  // lambda 1: exactly the LSTM
    o.weights = {0.0};
    o.interpolate = Interpolation{1.0, 0, LogUnits::Ln};
    Rescorer r(e, o);
    auto s = r.rescore({hyp("u", 1, "a b", {{-1.0}})}, "x");
    EXPECT_EQ(s[0].lm_logprob, s[0].lm.logprob);
  }
}

TEST(Rescorer, ConversationCarriesTheBestIntoTheNextUtteranceOfItsRecording) {
  auto m = Model::load((test::source_dir() / "models" / "fairytales-word").string());
  Engine e(m, 1);
  RescoreOptions o;
  o.conversation = true;
  Rescorer r(e, o);
  std::vector<Hypothesis> hs = {hyp("a", 1, "the king was old"), hyp("a", 2, "the king"),
                                hyp("b", 1, "he had a daughter"), hyp("b", 2, "he had a son")};
  for (auto& h : hs) h.recording = "rec1";
  Hypothesis other = hyp("c", 1, "the king was old");
  other.recording = "rec2";
  hs.push_back(other);
  auto s = r.rescore(hs, "x");
  // The reference: document mode over the chosen best of a, then each hypothesis of b alone after it.
  std::string best_a = s[0].best ? hs[0].text : hs[1].text;
  for (size_t i : {2, 3}) {
    ScoreOptions doc;
    doc.context = ContextMode::Document;
    auto want = by_scorer(e, {best_a, hs[i].text}, doc);
    expect_identical({want[1]}, {s[i].lm});
  }
  // A new recording starts from the sentence start: as sentence mode.
  expect_identical(by_scorer(e, {other.text}, {}), {s[4].lm});
}

TEST(Rescorer, TenThousandHypothesesOfOneUtterance) {
  auto m = Model::random(30, 8, 16, 1, 11);
  Engine e(m, 1);
  std::mt19937_64 rng(5);
  std::vector<Hypothesis> hs;
  std::vector<std::string> lines;
  for (int n = 1; n <= 10000; ++n) {
    std::string text = "t1 t2 t3 t4 t5 t6";
    for (int k = 0; k < 4; ++k) text += " t" + std::to_string(rng() % 30);
    hs.push_back(hyp("utt", n, text));
    lines.push_back(text);
  }
  Rescorer r(e, {});
  auto s = r.rescore(hs, "x");
  auto want = by_scorer(e, lines, {});
  std::vector<LineScore> got;
  int best = 0;
  for (auto& h : s) {
    got.push_back(h.lm);
    best += h.best;
  }
  expect_identical(want, got);
  EXPECT_EQ(best, 1);
  EXPECT_LT(r.stats().computed, r.stats().steps / 3);
}

}  // namespace
