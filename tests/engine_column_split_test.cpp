// The column split (a batch with fewer rows than threads: each operation's columns shared by all threads,
// engine/team.hpp) gives the same bits as one thread, in every mode, for batch 1 and for 3 rows on 4
// threads, with variable lengths, projected layers and tail panels. column_split_bytes = 0 forces the
// split on these small models; the team itself is tested below for errors and for blocking and waking.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "engine/team.hpp"
#include "engine/thread_pool.hpp"
#include "engine_models.hpp"
#include "kernels/backend.hpp"

using namespace lstmlm;
using namespace lstmlm::test;

namespace {

// Everything an engine call gives, from one engine.
struct Outputs {
  std::vector<std::vector<float>> score, entropy;
  std::vector<std::vector<int32_t>> rank;
  std::vector<State> score_st, predict_st, logprobs_st, advance_st;
  MatrixRM predict;
  std::vector<MatrixRM> logprobs;
  std::vector<float> step;
  State step_st;
};

Outputs run_all(Engine& e, const Sequences& in, const Sequences& tg, const std::vector<State>& st) {
  Outputs o;
  o.score_st = o.predict_st = o.logprobs_st = o.advance_st = st;
  e.score(in, tg, o.score_st, o.score, StepMeasures{&o.entropy, &o.rank});
  e.predict(in, o.predict_st, o.predict);
  e.logprobs(in, o.logprobs_st, o.logprobs);
  e.advance(in, o.advance_st);
  e.step(st[0], tg[0].empty() ? 0 : tg[0][0], o.step_st, o.step);
  return o;
}

void expect_same(const Outputs& a, const Outputs& b) {
  ASSERT_EQ(a.score, b.score);
  ASSERT_EQ(a.entropy, b.entropy);
  ASSERT_EQ(a.rank, b.rank);
  ASSERT_EQ(a.score_st, b.score_st);
  ASSERT_TRUE(same(a.predict, b.predict));
  ASSERT_EQ(a.predict_st, b.predict_st);
  ASSERT_EQ(a.logprobs.size(), b.logprobs.size());
  for (size_t r = 0; r < a.logprobs.size(); ++r)
    ASSERT_TRUE(same(a.logprobs[r], b.logprobs[r])) << "row " << r;
  ASSERT_EQ(a.logprobs_st, b.logprobs_st);
  ASSERT_EQ(a.advance_st, b.advance_st);
  ASSERT_EQ(a.step, b.step);
  ASSERT_EQ(a.step_st, b.step_st);
}

// The shared test models, and wider ones whose layers have more panels than the team has threads:
// projected layers (two phases), a decoder and layers with tail panels of every width.
std::vector<NamedModel> split_models() {
  std::vector<NamedModel> ms = test_models();
  ms.push_back({"wide_proj", make_model(301, 13, {{150, 37}, {83}, {70, 19}}, false, 21, 0.2f)});
  ms.push_back({"wide_tails", make_model(1003, 0, {{129}, {250}}, false, 22, 0.15f)});
  ms.push_back({"wide_tied", make_model(517, 40, {{97}, {40}}, true, 23, 0.2f)});
  // The generic cells over several panels, each part's units starting off a vector's boundary.
  ms.push_back({"wide_v3", make_model(211, 11,
                                      {LayerSpec::gru(131, false), LayerSpec::peephole(150, 37, 0.5f, 0.2f),
                                       LayerSpec::gru(77, true), LayerSpec::rnn(90)},
                                      false, 24, 0.2f)});
  return ms;
}

EngineOptions split_everything(int threads) {
  EngineOptions o;
  o.threads = threads;
  o.column_split_bytes = 0;
  o.row_split_bytes = 0;
  return o;
}

}  // namespace

TEST(EngineColumnSplit, BatchOneIsBitIdenticalToOneThread) {
  for (const auto& nm : split_models()) {
    SCOPED_TRACE(nm.name);
    const Model& m = *nm.model;
    std::mt19937_64 rng(31);
    Engine one(nm.model, 1), two(nm.model, split_everything(2)), four(nm.model, split_everything(4));
    for (int len : {0, 1, 5, 23}) {
      SCOPED_TRACE(len);
      const Sequences in = {random_tokens(rng, m.vocab_size(), len)};
      const Sequences tg = {random_tokens(rng, m.vocab_size(), len)};
      const std::vector<State> st = {random_state(m, rng)};
      const Outputs want = run_all(one, in, tg, st);
      expect_same(run_all(two, in, tg, st), want);
      expect_same(run_all(four, in, tg, st), want);
    }
  }
}

TEST(EngineColumnSplit, FewerRowsThanThreadsIsBitIdenticalToOneThread) {
  for (const auto& nm : split_models()) {
    SCOPED_TRACE(nm.name);
    const Model& m = *nm.model;
    std::mt19937_64 rng(32);
    Engine one(nm.model, 1), three(nm.model, split_everything(3)), four(nm.model, split_everything(4));
    for (int B : {2, 3}) {
      SCOPED_TRACE(B);
      Sequences in, tg;
      std::vector<State> st;
      for (int r = 0; r < B; ++r) {
        const int len = r == 1 ? 0 : 3 + 7 * r;  // variable lengths, one row empty
        in.push_back(random_tokens(rng, m.vocab_size(), len));
        tg.push_back(random_tokens(rng, m.vocab_size(), len));
        st.push_back(random_state(m, rng));
      }
      const Outputs want = run_all(one, in, tg, st);
      expect_same(run_all(three, in, tg, st), want);
      expect_same(run_all(four, in, tg, st), want);
    }
  }
}

// The low precisions run peepholes and the projection clip as the generic LSTM too: wide layers split
// into parts whose units start off a vector's boundary.
TEST(EngineColumnSplit, LowPrecisionGenericCellsSplitGiveTheSameBits) {
  const auto models = split_models();
  const auto wide =
      std::find_if(models.begin(), models.end(), [](const auto& m) { return m.name == "wide_v3"; });
  ASSERT_NE(wide, models.end());
  const auto model = wide->model;
  for (Precision p : {Precision::Bf16, Precision::Int8}) {
    SCOPED_TRACE(precision_name(p));
    // bf16 where an Engine refuses it (an x86-64 CPU without AVX-512, aarch64): nothing to split.
    if (!kernels::refusal(p).empty()) continue;
    std::mt19937_64 rng(34);
    EngineOptions o1;
    o1.threads = 1;
    o1.precision = p;
    EngineOptions o3 = split_everything(3);
    o3.precision = p;
    Engine one(model, o1), three(model, o3);
    const Sequences in = {random_tokens(rng, model->vocab_size(), 11)};
    const Sequences tg = {random_tokens(rng, model->vocab_size(), 11)};
    const std::vector<State> st = {random_state(*model, rng)};
    expect_same(run_all(three, in, tg, st), run_all(one, in, tg, st));
  }
}

TEST(EngineColumnSplit, DefaultThresholdGivesTheSameBits) {
  // Whichever operations the default threshold splits, the results do not move.
  const auto model = make_model(3001, 64, {{400}, {64}}, false, 24, 0.05f);
  std::mt19937_64 rng(33);
  const Sequences in = {random_tokens(rng, model->vocab_size(), 9)};
  const Sequences tg = {random_tokens(rng, model->vocab_size(), 9)};
  const std::vector<State> st = {random_state(*model, rng)};
  Engine one(model, 1), two(model, EngineOptions{.threads = 2, .row_split_bytes = 0});
  expect_same(run_all(two, in, tg, st), run_all(one, in, tg, st));
}

TEST(Team, RunsEveryPartOnceAndWakesBlockedMembers) {
  for (int size : {2, 3, 4}) {
    engine::ThreadPool pool(size);
    engine::Team team(size);
    std::vector<int> hits(size_t(size), 0);
    for (int rep = 0; rep < 3; ++rep)
      engine::run_session(pool, team, [&] {
        for (int task = 0; task < 2000; ++task) {
          // Now and then a pause long enough for the members to stop spinning and block.
          if (task % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          team.run([&](int part) {
            ++hits[size_t(part)];  // each part's own counter: the team orders the tasks
            if (part == 0 && task % 700 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          });
        }
      });
    for (int h : hits) EXPECT_EQ(h, 3 * 2000) << "size " << size;
  }
}

TEST(Team, AnExceptionInAnyPartReachesTheLeaderAndTheTeamGoesOn) {
  engine::ThreadPool pool(4);
  engine::Team team(4);
  for (int thrower : {0, 1, 3}) {
    EXPECT_THROW(engine::run_session(pool, team,
                                     [&] {
                                       team.run([](int) {});
                                       team.run([&](int part) {
                                         if (part == thrower) throw std::runtime_error("part");
                                       });
                                       ADD_FAILURE() << "run returned after a part threw";
                                     }),
                 std::runtime_error)
        << "thrower " << thrower;
    std::atomic<int> sum{0};
    engine::run_session(pool, team, [&] { team.run([&](int part) { sum += part; }); });
    EXPECT_EQ(sum.load(), 0 + 1 + 2 + 3);
  }
}
