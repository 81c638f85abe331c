// Batch invariance (docs/architecture.md, numerics invariants) and streaming: a sequence's log-probabilities
// and final state are bit-identical (==) alone, at every position of batches of 2..64 mixed-length rows, with
// 1 or 2 threads, and when run in chunks with the state carried over.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine_models.hpp"

using namespace lstmlm;
using namespace lstmlm::test;

namespace {

struct Result {
  std::vector<MatrixRM> lp;
  std::vector<State> st;
};

Result run(Engine& eng, const Sequences& in, const std::vector<State>& start) {
  Result r;
  r.st = start;
  eng.logprobs(in, r.st, r.lp);
  return r;
}

}  // namespace

TEST(EngineInvariance, RowAloneEqualsRowAtEveryPositionOfEveryBatch) {
  for (const auto& nm : test_models()) {
    SCOPED_TRACE(nm.name);
    const Model& m = *nm.model;
    std::mt19937_64 rng(99);
    // The probe row, and its results alone with one thread.
    Sequences probe = {random_tokens(rng, m.vocab_size(), 6)};
    std::vector<State> probe_state = {random_state(m, rng)};
    Engine e1(nm.model, 1), e2(nm.model, EngineOptions{.threads = 2, .row_split_bytes = 0});
    Result alone = run(e1, probe, probe_state);
    std::uniform_int_distribution<int> len(0, 11);
    for (int B : {2, 3, 5, 8, 13, 31, 64}) {
      for (int pos : {0, B / 2, B - 1}) {
        Sequences in;
        std::vector<State> st;
        for (int r = 0; r < B; ++r) {
          if (r == pos) {
            in.push_back(probe[0]);
            st.push_back(probe_state[0]);
          } else {
            in.push_back(random_tokens(rng, m.vocab_size(), len(rng)));
            st.push_back(random_state(m, rng));
          }
        }
        for (Engine* e : {&e1, &e2}) {
          Result got = run(*e, in, st);
          ASSERT_TRUE(same(got.lp[size_t(pos)], alone.lp[0]))
              << "B=" << B << " pos=" << pos << " threads=" << e->threads();
          ASSERT_EQ(got.st[size_t(pos)], alone.st[0])
              << "B=" << B << " pos=" << pos << " threads=" << e->threads();
        }
      }
    }
  }
}

TEST(EngineInvariance, ScoreAndPredictAreBatchInvariant) {
  for (const auto& nm : test_models()) {
    SCOPED_TRACE(nm.name);
    const Model& m = *nm.model;
    std::mt19937_64 rng(5);
    Sequences in, tg;
    for (int r = 0; r < 37; ++r) {
      int n = int(rng() % 9);
      in.push_back(random_tokens(rng, m.vocab_size(), n));
      tg.push_back(random_tokens(rng, m.vocab_size(), n));
    }
    std::vector<State> st0(in.size(), State::zeros(m));
    Engine e2(nm.model, EngineOptions{.threads = 2, .row_split_bytes = 0}), e1(nm.model, 1);
    auto sb = st0;
    std::vector<std::vector<float>> sc;
    e2.score(in, tg, sb, sc);
    auto pb = st0;
    MatrixRM pred;
    e2.predict(in, pb, pred);
    for (size_t r = 0; r < in.size(); ++r) {
      std::vector<State> s1 = {st0[r]};
      std::vector<std::vector<float>> sc1;
      e1.score({in[r]}, {tg[r]}, s1, sc1);
      ASSERT_EQ(sc1[0], sc[r]) << "row " << r;
      ASSERT_EQ(s1[0], sb[r]) << "row " << r;
      std::vector<State> p1 = {st0[r]};
      MatrixRM pred1;
      e1.predict({in[r]}, p1, pred1);
      ASSERT_TRUE(pred1.row(0) == pred.row(Eigen::Index(r))) << "row " << r;
    }
  }
}

TEST(EngineStreaming, ChunksWithCarriedStateEqualWholeSequence) {
  for (const auto& nm : test_models()) {
    SCOPED_TRACE(nm.name);
    const Model& m = *nm.model;
    std::mt19937_64 rng(11);
    std::vector<int32_t> seq = random_tokens(rng, m.vocab_size(), 17);
    State s0 = random_state(m, rng);
    Engine eng(nm.model, EngineOptions{.threads = 2, .row_split_bytes = 0});
    Result whole = run(eng, {seq}, {s0});
    for (int chunk : {1, 3, 5, 16}) {
      State s = s0;
      int row = 0;
      for (size_t i = 0; i < seq.size(); i += size_t(chunk)) {
        std::vector<int32_t> part(seq.begin() + long(i),
                                  seq.begin() + long(std::min(seq.size(), i + size_t(chunk))));
        Result r = run(eng, {part}, {s});
        for (Eigen::Index t = 0; t < r.lp[0].rows(); ++t, ++row)
          ASSERT_TRUE(r.lp[0].row(t) == whole.lp[0].row(row)) << "chunk " << chunk << " step " << row;
        s = r.st[0];
      }
      ASSERT_EQ(s, whole.st[0]) << "chunk " << chunk;
    }
    // advance() then predict() and step() by step reach the same state and distribution.
    std::vector<State> adv = {s0};
    eng.advance({seq}, adv);
    EXPECT_EQ(adv[0], whole.st[0]);
    State s = s0, next;
    std::vector<float> lp;
    for (size_t t = 0; t < seq.size(); ++t) {
      eng.step(s, seq[t], next, lp);
      ASSERT_TRUE(std::equal(lp.begin(), lp.end(), whole.lp[0].row(Eigen::Index(t)).data())) << "step " << t;
      s = next;
    }
    EXPECT_EQ(s, whole.st[0]);
  }
}
