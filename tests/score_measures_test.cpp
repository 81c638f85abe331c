// Entropy and rank beside the scores (Engine::score with StepMeasures, Scorer with ScoreOptions), checked
// against the float64 reference cell, and word aggregation on the bundled char model.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine_models.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/score.hpp"
#include "micro_model.hpp"
#include "reference_lstm.hpp"
#include "test_util.hpp"

namespace {

using namespace lstmlm;
using namespace lstmlm::test;

constexpr double kMeasuresTol = 1e-4;

// The micro model's entropy after a token whose h is `h`: logits [h, 0, 0].
double entropy_of(double h) {
  double z = std::exp(h) + 2, pa = std::exp(h) / z, pb = 1 / z;
  return -(pa * std::log(pa) + 2 * pb * std::log(pb));
}

TEST(ScoreMeasures, EntropyAndRankMatchFloat64Reference) {
  for (const auto& nm : test_models()) {
    SCOPED_TRACE(nm.name);
    const Model& m = *nm.model;
    std::mt19937_64 rng(7);
    Sequences in, tg;
    std::vector<State> start;
    for (int len : {5, 0, 12, 1, 8}) {
      in.push_back(random_tokens(rng, m.vocab_size(), len));
      tg.push_back(random_tokens(rng, m.vocab_size(), len));
      start.push_back(random_state(m, rng));
    }
    std::vector<State> states = start;
    Engine eng(nm.model, EngineOptions{.threads = 2, .row_split_bytes = 0});
    std::vector<std::vector<float>> lp, entropy;
    std::vector<std::vector<int32_t>> rank;
    eng.score(in, tg, states, lp, StepMeasures{&entropy, &rank});
    ASSERT_EQ(entropy.size(), in.size());
    for (size_t r = 0; r < in.size(); ++r) {
      RefState ref = to_ref(start[r]);
      auto want = reference_forward(m, in[r], ref);
      ASSERT_EQ(entropy[r].size(), in[r].size());
      ASSERT_EQ(rank[r].size(), in[r].size());
      for (size_t t = 0; t < want.size(); ++t) {
        double h = 0;
        for (double l : want[t]) h -= std::exp(l) * l;
        EXPECT_NEAR(entropy[r][t], h, kMeasuresTol) << "row " << r << " step " << t;
        // The reference's rank, allowing logits within the tolerance to fall either way.
        const double target = want[t][size_t(tg[r][t])];
        int32_t surely = 0, maybe = 0;
        for (double l : want[t]) {
          surely += l > target + kMeasuresTol;
          maybe += l > target - kMeasuresTol;
        }
        EXPECT_GE(rank[r][t], 1 + surely) << "row " << r << " step " << t;
        EXPECT_LE(rank[r][t], maybe) << "row " << r << " step " << t;  // maybe counts the target itself
      }
    }
  }
}

TEST(ScoreMeasures, ScoresAndStatesBitIdenticalWithMeasures) {
  for (const auto& nm : test_models()) {
    SCOPED_TRACE(nm.name);
    std::mt19937_64 rng(11);
    Sequences in, tg;
    std::vector<State> a;
    for (int len : {9, 3, 0, 14}) {
      in.push_back(random_tokens(rng, nm.model->vocab_size(), len));
      tg.push_back(random_tokens(rng, nm.model->vocab_size(), len));
      a.push_back(random_state(*nm.model, rng));
    }
    std::vector<State> b = a;
    Engine eng(nm.model, EngineOptions{.threads = 2, .row_split_bytes = 0});
    std::vector<std::vector<float>> plain, with, entropy;
    std::vector<std::vector<int32_t>> rank;
    eng.score(in, tg, a, plain);
    eng.score(in, tg, b, with, StepMeasures{&entropy, &rank});
    for (size_t r = 0; r < in.size(); ++r)
      for (size_t t = 0; t < in[r].size(); ++t)
        EXPECT_EQ(std::memcmp(&plain[r][t], &with[r][t], sizeof(float)), 0) << "row " << r << " step " << t;
    EXPECT_EQ(a, b);
  }
}

TEST(ScoreMeasures, MicroModelByHand) {
  // The logits are [h, 0, 0] with h = -t after </s>, +t after b and 0 after a (micro_model.hpp; after a,
  // 0 up to the denormal sigmoid(-100) * c, of the sign of the c before, so only ranks that hold either
  // way are checked).
  tasks::ScoreOptions o;
  o.entropy = o.rank = true;
  Engine engine(micro_model(), 1);
  tasks::Scorer s(engine, o);
  auto r = s.score({"a b"}, "test", 1);
  const auto& w = r[0].words;  // a b </s>
  ASSERT_EQ(w.size(), 3u);
  const double t = std::tanh(std::tanh(1.0));
  EXPECT_NEAR(w[0].entropy, entropy_of(-t), 1e-6);  // after </s>
  EXPECT_NEAR(w[1].entropy, std::log(3.0), 1e-6);   // after a: uniform
  EXPECT_NEAR(w[2].entropy, entropy_of(t), 1e-6);   // after b
  EXPECT_EQ(w[0].rank, 3);                          // a after </s>: -t below both zeros
  EXPECT_EQ(w[1].rank, 1);                          // b after a (after </s>): tied first with </s>
  EXPECT_EQ(w[2].rank, 2);                          // </s> after b: below a's +t
  EXPECT_NEAR(w[1].logprob, micro_logprob(0, 1), 1e-6);
}

TEST(ScoreMeasures, ContextOnlyWordHasNoMeasures) {
  tasks::ScoreOptions o;
  o.entropy = o.rank = true;
  Engine engine(micro_model(/*with_eos=*/false), 1);
  tasks::Scorer s(engine, o);
  auto r = s.score({"b a"}, "test", 1);
  EXPECT_FALSE(r[0].words[0].scored);
  EXPECT_EQ(r[0].words[0].rank, 0);
  EXPECT_EQ(r[0].words[0].entropy, 0.0f);
  EXPECT_EQ(r[0].words[1].rank, 1);  // a after b: logits [t, 0, 0]
}

std::shared_ptr<const Model> charrnn() {
  return Model::load((source_dir() / "models" / "charrnn-space").string());
}

TEST(ScoreMeasures, AggregateWordsSumsCharactersAndFollowingSpace) {
  auto m = charrnn();
  Engine engine(m, 1);
  tasks::ScoreOptions chars_opt;
  chars_opt.entropy = true;
  chars_opt.context =
      tasks::ContextMode::Document;  // no start token: only the stream's first char is context
  tasks::ScoreOptions words_opt = chars_opt;
  words_opt.aggregate = tasks::Aggregate::Words;
  const std::vector<std::string> lines{"the cat  sat", "on it "};
  auto c = tasks::Scorer(engine, chars_opt).score(lines, "t", 1);
  auto w = tasks::Scorer(engine, words_opt).score(lines, "t", 1);
  ASSERT_EQ(w[0].words.size(), 3u);
  EXPECT_EQ(w[0].words[0].token, "the");
  EXPECT_EQ(w[0].words[1].token, "cat");
  EXPECT_EQ(w[0].words[2].token, "sat");
  EXPECT_FALSE(w[0].words[0].scored);  // its first character is context only
  // cat = c a t + the two spaces after it; sat = s a t + the "\n" document mode feeds after the line
  // (no eos in this model).
  ASSERT_EQ(c[0].words.size(), 13u);
  EXPECT_EQ(c[0].words[12].token, "\n");
  double cat = 0, sat = 0;
  for (size_t i = 4; i < 9; ++i) cat += c[0].words[i].logprob;
  for (size_t i = 9; i < 13; ++i) sat += c[0].words[i].logprob;
  EXPECT_NEAR(w[0].words[1].logprob, cat, 1e-5);
  EXPECT_NEAR(w[0].words[2].logprob, sat, 1e-5);
  EXPECT_EQ(w[0].words[1].entropy, c[0].words[4].entropy);  // before its first character
  EXPECT_EQ(w[0].words[1].id, -1);
  // Totals stay per character.
  EXPECT_EQ(w[0].tokens, c[0].tokens);
  EXPECT_EQ(w[0].logprob, c[0].logprob);
  ASSERT_EQ(w[1].words.size(), 2u);  // "on", "it " (its trailing space and "\n" included)
  EXPECT_NEAR(w[1].words[1].logprob,
              c[1].words[3].logprob + c[1].words[4].logprob + c[1].words[5].logprob + c[1].words[6].logprob,
              1e-5);
  EXPECT_TRUE(w[1].words[0].scored);
}

// The micro model's weights (micro_model.hpp) as a char model: characters "a", " " and "\n" (the eos) in
// place of a, b and </s>, so micro_logprob gives its log-probs.
std::shared_ptr<const Model> micro_char_model() {
  auto base = micro_model();
  ModelConfig c = base->config();
  c.tokenizer.type = TokenizerType::Char;
  c.tokenizer.eos_token = "\n";
  return Model::create(c, Vocab({"a", " ", "\n"}), base->weights());
}

TEST(ScoreMeasures, AggregateEosGoesToLastWord) {
  auto m = micro_char_model();
  Engine engine(m, 1);
  tasks::ScoreOptions o;
  o.aggregate = tasks::Aggregate::Words;
  o.entropy = true;
  auto r = tasks::Scorer(engine, o).score({"a a", "", " a"}, "t", 1);
  constexpr int A = 0, S = 1, E = 2;
  ASSERT_EQ(r[0].words.size(), 2u);
  EXPECT_EQ(r[0].words[0].token, "a");
  EXPECT_NEAR(r[0].words[0].logprob, micro_logprob(E, A) + micro_logprob(A, S), 1e-5);
  EXPECT_NEAR(r[0].words[1].logprob, micro_logprob(S, A) + micro_logprob(A, E), 1e-5);
  EXPECT_FALSE(r[0].words[1].eos);
  ASSERT_EQ(r[1].words.size(), 1u);  // an empty line: the eos alone
  EXPECT_TRUE(r[1].words[0].eos);
  EXPECT_NEAR(r[1].words[0].logprob, micro_logprob(E, E), 1e-5);
  ASSERT_EQ(r[2].words.size(), 1u);  // leading whitespace goes to the first word
  EXPECT_NEAR(r[2].words[0].logprob, micro_logprob(E, S) + micro_logprob(S, A) + micro_logprob(A, E), 1e-5);
  EXPECT_NEAR(r[2].words[0].entropy, entropy_of(std::tanh(std::tanh(1.0))), 1e-6);  // before "a", after " "
}

TEST(ScoreMeasures, AggregateRefusedOnWordModelAndWithRank) {
  tasks::ScoreOptions o;
  o.aggregate = tasks::Aggregate::Words;
  Engine word_engine(micro_model(), 1);
  EXPECT_THROW(tasks::Scorer(word_engine, o), UsageError);
  Engine engine(micro_char_model(), 1);
  o.rank = true;
  EXPECT_THROW(tasks::Scorer(engine, o), UsageError);
}

}  // namespace
