// LatticeRescorer: the TheanoLM lattice's n-best from its own scores is SRILM lattice-tool's, and on random
// lattices every path's numbers are those Rescorer gives the path as an n-best entry, bit for bit, with the
// 1-best that exhaustive enumeration finds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "lstmlm/lattice.hpp"
#include "lstmlm/tasks/lattice.hpp"
#include "lstmlm/tasks/rescore.hpp"
#include "test_util.hpp"

namespace {

namespace lt = lstmlm;
using lstmlm::tasks::LatticeRescoreOptions;
using lstmlm::tasks::LatticeRescorer;

std::string theanolm(const std::string& f) {
  return (lstmlm::test::shared_data() / "theanolm-lattices" / f).string();
}

lt::Lattice read_one(const std::string& path, std::shared_ptr<const lt::SymbolTable> words) {
  lt::LatticeReader r(path, {std::nullopt, std::move(words)});
  lt::Lattice l;
  EXPECT_TRUE(r.next(l));
  return l;
}

// SOURCE.md: SRILM lattice-tool's 12-best, ordered by acoustic + 12.3 x LM + 0.7 per word (natural logs).
const std::vector<std::string> kSrilm = {
    "it didn't elaborate",    "but it didn't elaborate", "the didn't elaborate",   "and it didn't elaborate",
    "e. didn't elaborate",    "in it didn't elaborate",  "a didn't elaborate",     "at it didn't elaborate",
    "it it didn't elaborate", "to it didn't elaborate",  "a. it didn't elaborate", "a it didn't elaborate"};

void expect_srilm_list(const lt::Lattice& l, LatticeRescoreOptions o, size_t acoustic, size_t lm,
                       double sign) {
  o.word_penalty = 0.7;
  o.n_best = 100;
  LatticeRescorer r(nullptr, o);
  const auto res = r.rescore(l);
  ASSERT_EQ(res.nbest.size(), kSrilm.size());
  for (size_t i = 0; i < kSrilm.size(); ++i) EXPECT_EQ(res.nbest[i].hyp.text, kSrilm[i]) << i;
  // The log10 scores SOURCE.md quotes (TheanoLM's test, to the digits it prints).
  auto log10_of = [&](size_t i, size_t k) { return sign * res.nbest[i].hyp.scores[k][0] / std::log(10.0); };
  EXPECT_NEAR(log10_of(0, acoustic), -8686.28, 0.005);
  EXPECT_NEAR(log10_of(0, lm), -94.3896, 0.00005);
  EXPECT_NEAR(log10_of(1, acoustic), -8743.96, 0.005);
  EXPECT_NEAR(log10_of(1, lm), -111.488, 0.0005);
  EXPECT_NEAR(log10_of(11, acoustic), -8696.26, 0.005);
  EXPECT_NEAR(log10_of(11, lm), -178.00, 0.005);
  EXPECT_TRUE(res.nbest[0].score.best);
  EXPECT_EQ(r.stats().steps, 0);
}

TEST(LatticeNbest, TheanoLmKaldiFormGivesSrilmsList) {
  if (!std::filesystem::exists(theanolm("lattice.lat"))) GTEST_SKIP() << "../shared/data is absent";
  const auto l = read_one(theanolm("lattice.lat"), lt::SymbolTable::load(theanolm("words.txt")));
  LatticeRescoreOptions o;
  o.weights = {-12.3, -1.0};  // graph, acoustic: costs
  expect_srilm_list(l, o, 1, 0, -1);
}

TEST(LatticeNbest, TheanoLmSlfFormGivesSrilmsList) {
  if (!std::filesystem::exists(theanolm("lattice.slf"))) GTEST_SKIP() << "../shared/data is absent";
  const auto l = read_one(theanolm("lattice.slf"), nullptr);
  LatticeRescoreOptions o;
  o.weights = {1.0, 12.3};  // acoustic, lm: log-probs
  expect_srilm_list(l, o, 0, 1, 1);
}

// A random lattice over the words of `vocab` (some out of it): a chain through every state, so that each is
// reached and finishes, plus random forward arcs, epsilons among them, and two final states.
lt::Lattice random_lattice(std::mt19937_64& rng, const std::vector<std::string>& vocab, int states,
                           int extra) {
  lt::Lattice l;
  l.source = "random";
  l.key = "r" + std::to_string(rng() % 1000);
  l.line = 1;
  l.states = states;
  l.score_names = {"graph", "acoustic"};
  auto arc = [&](int32_t from, int32_t to) {
    lt::LatticeArc a;
    a.from = from;
    a.to = to;
    if (rng() % 6 == 0) {
      a.epsilon = true;
      a.word = "<eps>";
    } else {
      a.word = rng() % 15 == 0 ? "zzqx" : vocab[rng() % vocab.size()];
    }
    a.scores = {double(rng() % 1000) / 100.0, double(rng() % 10000) / 10.0};
    a.line = l.arcs.size() + 2;
    l.arcs.push_back(a);
  };
  for (int32_t s = 0; s + 1 < states; ++s) arc(s, s + 1);
  for (int k = 0; k < extra; ++k) {
    const int32_t a = int32_t(rng() % uint64_t(states - 1));
    const int32_t b = a + 1 + int32_t(rng() % uint64_t(std::min(3, states - 1 - a)));
    arc(a, b);
  }
  l.finals.push_back({states - 1, {0.5, 1.0}, 0});
  l.finals.push_back({states - 2, {2.0, 3.0}, 0});
  return l;
}

bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(LatticeRescore, EveryPathAsRescoreGivesItAndTheBestIsExhaustive) {
  auto word_model = lt::Model::load((lt::test::source_dir() / "models" / "fairytales-word").string());
  const std::vector<std::string> words = {"the",  "king", "a",    "queen", "was",
                                          "once", "upon", "time", "there"};
  std::mt19937_64 rng(61);
  lt::Engine engine(word_model, 1);
  for (int trial = 0; trial < 6; ++trial) {
    SCOPED_TRACE("lattice " + std::to_string(trial));
    const auto l = random_lattice(rng, words, 6 + trial, 6 + 2 * trial);
    LatticeRescoreOptions o;
    o.weights = {-1.0, -0.1};
    o.word_penalty = 0.25;
    o.n_best = 1 << 20;  // every distinct word sequence
    o.score.batch_size = trial % 2 ? 3 : 64;
    LatticeRescorer lr(&engine, o);
    const auto res = lr.rescore(l);
    ASSERT_FALSE(res.nbest.empty());
    // Each path through Rescorer as a hypothesis of an n-best list, with the path's score totals.
    lt::tasks::RescoreOptions ro;
    ro.weights = o.weights;
    ro.word_penalty = o.word_penalty;
    lt::tasks::Rescorer nb(engine, ro);
    std::vector<lt::tasks::Hypothesis> hyps;
    for (const auto& p : res.nbest) hyps.push_back(p.hyp);
    const auto want = nb.rescore(hyps, "random");
    for (size_t i = 0; i < hyps.size(); ++i) {
      EXPECT_TRUE(same(want[i].lm_logprob, res.nbest[i].score.lm_logprob)) << hyps[i].text;
      EXPECT_TRUE(same(want[i].combined, res.nbest[i].score.combined)) << hyps[i].text;
      EXPECT_EQ(want[i].words, res.nbest[i].score.words);
      EXPECT_EQ(want[i].best, res.nbest[i].score.best) << hyps[i].text;
    }
    // Exhaustive enumeration of every path (not only each word sequence's best), each scored by Rescorer.
    std::vector<lt::tasks::Hypothesis> all;
    std::vector<size_t> path;
    std::function<void(int32_t)> walk = [&](int32_t s) {
      for (const auto& f : l.finals)
        if (f.state == s) {
          lt::tasks::Hypothesis h;
          h.utt = l.key;
          h.id = l.key + "-" + std::to_string(all.size() + 1);
          h.n = int64_t(all.size() + 1);
          h.scores = {{0.0}, {0.0}};
          for (size_t a : path) {
            if (!l.arcs[a].epsilon) h.text += (h.text.empty() ? "" : " ") + l.arcs[a].word;
            h.scores[0][0] += l.arcs[a].scores[0];
            h.scores[1][0] += l.arcs[a].scores[1];
          }
          h.scores[0][0] += f.scores[0];
          h.scores[1][0] += f.scores[1];
          all.push_back(h);
        }
      for (size_t a = 0; a < l.arcs.size(); ++a)
        if (l.arcs[a].from == s) {
          path.push_back(a);
          walk(l.arcs[a].to);
          path.pop_back();
        }
    };
    walk(l.start);
    const auto every = nb.rescore(all, "random");
    size_t best = 0;
    for (size_t i = 0; i < every.size(); ++i)
      if (every[i].best) best = i;
    EXPECT_EQ(all[best].text, res.nbest[0].hyp.text);
    EXPECT_TRUE(same(every[best].combined, res.nbest[0].score.combined));
  }
}

TEST(LatticeRescore, MergingRunsFewerStepsAndBatchingChangesNoNumber) {
  auto m = lt::Model::load((lt::test::source_dir() / "models" / "fairytales-word").string());
  const std::vector<std::string> words = {"the", "king", "a", "queen", "was", "once", "upon", "time"};
  std::mt19937_64 rng(7);
  lt::Engine engine(m, 1);
  const auto l = random_lattice(rng, words, 14, 40);
  LatticeRescoreOptions o;
  o.weights = {-1.0, -0.1};
  LatticeRescorer full(&engine, o);
  const auto exact = full.rescore(l);
  o.max_ngram_order = 2;
  double first = 0;
  for (int bs : {1, 5, 64}) {
    o.score.batch_size = bs;
    LatticeRescorer merged(&engine, o);
    const auto r = merged.rescore(l);
    EXPECT_LT(merged.stats().steps, full.stats().steps / 2);
    EXPECT_GT(merged.stats().merged, 0);
    ASSERT_EQ(r.nbest.size(), 1u);
    if (bs == 1) first = r.nbest[0].score.combined;
    EXPECT_TRUE(same(first, r.nbest[0].score.combined)) << "batch " << bs;
  }
  EXPECT_EQ(exact.nbest.size(), 1u);
}

TEST(LatticeRescore, RescoredLatticeKeepsTheBestPath) {
  auto m = lt::Model::load((lt::test::source_dir() / "models" / "fairytales-word").string());
  std::mt19937_64 rng(3);
  lt::Engine engine(m, 1);
  const auto l = random_lattice(rng, {"the", "king", "was", "a"}, 7, 8);
  LatticeRescoreOptions o;
  o.weights = {-1.0, -0.1};
  o.word_penalty = 0.5;
  o.lattice_out = true;
  LatticeRescorer r(&engine, o);
  const auto res = r.rescore(l);
  EXPECT_NO_THROW(lt::check_lattice(res.rescored));
  // Its own scores alone, as lattice-best-path --acoustic-scale=0.1 reads them, give the same best.
  LatticeRescoreOptions again;
  again.weights = {-1.0, -0.1};
  LatticeRescorer plain(nullptr, again);
  const auto best = plain.rescore(res.rescored);
  EXPECT_EQ(best.nbest[0].hyp.text, res.nbest[0].hyp.text);
  EXPECT_NEAR(best.nbest[0].score.combined, res.nbest[0].score.combined, 1e-9);
}

}  // namespace

namespace {

// Without an LM a path's score is a sum over its arcs, so one history per node (Viterbi) finds the best
// path exactly; the bound holds the histories made in check.
TEST(LatticeRescore, OneHistoryPerNodeIsViterbiWithoutAnLm) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> words = {"a", "b", "c", "d"};
  for (int trial = 0; trial < 20; ++trial) {
    const auto l = random_lattice(rng, words, 8 + trial % 5, 20);
    LatticeRescoreOptions o;
    o.weights = {-1.0, -0.1};
    o.word_penalty = 0.5;
    LatticeRescorer all(nullptr, o);
    o.max_tokens_per_node = 1;
    LatticeRescorer one(nullptr, o);
    const auto want = all.rescore(l), got = one.rescore(l);
    EXPECT_EQ(got.nbest[0].hyp.text, want.nbest[0].hyp.text);
    EXPECT_EQ(got.nbest[0].score.combined, want.nbest[0].score.combined);
    EXPECT_GT(one.stats().pruned, 0);
    EXPECT_LE(one.stats().histories, 1 + 2 * int64_t(l.arcs.size()));
  }
}

}  // namespace
