// The fused engine against the naive float64 reference (tests/reference_lstm.cpp) on random models of
// every supported shape, random lengths and random starting states.
#include <gtest/gtest.h>

#include "engine/packed_model.hpp"
#include "engine_models.hpp"
#include "lstmlm/error.hpp"
#include "reference_lstm.hpp"

using namespace lstmlm;
using namespace lstmlm::test;

namespace {

constexpr double kReferenceTol = 2e-5;

void expect_state_near(const State& got, const RefState& want, const std::string& what) {
  for (size_t k = 0; k < got.h.size(); ++k) {
    for (size_t j = 0; j < got.h[k].size(); ++j)
      ASSERT_NEAR(got.h[k][j], want.h[k][j], kReferenceTol) << what << " h l" << k;
    for (size_t j = 0; j < got.c[k].size(); ++j)
      ASSERT_NEAR(got.c[k][j], want.c[k][j], kReferenceTol) << what << " c l" << k;
  }
}

}  // namespace

TEST(EngineReference, TableFallbackIsExercised) {
  for (const auto& nm : test_models())
    EXPECT_EQ(engine::packed_model(*nm.model)->folded(), !nm.name.starts_with("no_table")) << nm.name;
}

TEST(EngineReference, LogprobsAndStatesMatchFloat64Reference) {
  for (const auto& nm : test_models()) {
    SCOPED_TRACE(nm.name);
    const Model& m = *nm.model;
    std::mt19937_64 rng(42);
    Sequences in;
    std::vector<State> states, start;
    for (int len : {0, 1, 9, 4, 7, 2}) {
      in.push_back(random_tokens(rng, m.vocab_size(), len));
      start.push_back(random_state(m, rng));
    }
    states = start;
    Engine eng(nm.model, EngineOptions{.threads = 2, .row_split_bytes = 0});
    std::vector<MatrixRM> out;
    eng.logprobs(in, states, out);
    for (size_t r = 0; r < in.size(); ++r) {
      RefState ref = to_ref(start[r]);
      auto want = reference_forward(m, in[r], ref);
      ASSERT_EQ(out[r].rows(), Eigen::Index(in[r].size()));
      for (size_t t = 0; t < want.size(); ++t)
        for (int v = 0; v < m.vocab_size(); ++v)
          ASSERT_NEAR(out[r](Eigen::Index(t), v), want[t][size_t(v)], kReferenceTol)
              << "row " << r << " step " << t << " v " << v;
      expect_state_near(states[r], ref, "row " + std::to_string(r));
    }
  }
}

// Both layouts of layer 0's input term, forced on every test model (the one-hot ones fold whatever is
// asked), against the float64 reference; the layout and the packed size are the ones asked for: the table
// holds V x G floats where the unfolded layout holds the V x E embedding (plus W_ih, packed in the layer).
TEST(EngineReference, BothLayer0LayoutsMatchFloat64Reference) {
  for (const auto& nm : test_models()) {
    const Model& m = *nm.model;
    const bool one_hot = m.config().embedding_dim == 0;
    for (EmbeddingFold fold : {EmbeddingFold::Always, EmbeddingFold::Never}) {
      SCOPED_TRACE(nm.name + (fold == EmbeddingFold::Always ? " always" : " never"));
      const auto packed = engine::packed_model(m, Precision::Fp32, nullptr, fold);
      EXPECT_EQ(packed->folded(), fold == EmbeddingFold::Always || one_hot);
      const size_t V = size_t(m.vocab_size()), E = size_t(m.config().embedding_dim);
      if (!one_hot) {
        EXPECT_EQ(packed->table.size() + packed->embedding_rows.size(),
                  fold == EmbeddingFold::Always ? V * size_t(packed->layers[0]->term_width()) : V * E);
      }
      std::mt19937_64 rng(11);
      Sequences in;
      std::vector<State> start;
      for (int len : {5, 1, 8}) {
        in.push_back(random_tokens(rng, m.vocab_size(), len));
        start.push_back(random_state(m, rng));
      }
      auto states = start;
      Engine eng(nm.model, EngineOptions{.threads = 2, .row_split_bytes = 0, .fold = fold});
      std::vector<MatrixRM> out;
      eng.logprobs(in, states, out);
      for (size_t r = 0; r < in.size(); ++r) {
        RefState ref = to_ref(start[r]);
        auto want = reference_forward(m, in[r], ref);
        for (size_t t = 0; t < want.size(); ++t)
          for (int v = 0; v < m.vocab_size(); ++v)
            ASSERT_NEAR(out[r](Eigen::Index(t), v), want[t][size_t(v)], kReferenceTol)
                << "row " << r << " step " << t << " v " << v;
        expect_state_near(states[r], ref, "row " + std::to_string(r));
      }
    }
  }
}

TEST(EngineReference, ScoreAndPredictAgreeWithLogprobs) {
  for (const auto& nm : test_models()) {
    SCOPED_TRACE(nm.name);
    const Model& m = *nm.model;
    std::mt19937_64 rng(7);
    Sequences in, tg;
    for (int len : {3, 0, 6, 1}) {
      in.push_back(random_tokens(rng, m.vocab_size(), len));
      tg.push_back(random_tokens(rng, m.vocab_size(), len));
    }
    std::vector<State> s0(in.size(), State::zeros(m));
    Engine eng(nm.model, 1);
    std::vector<MatrixRM> full;
    auto s1 = s0;
    eng.logprobs(in, s1, full);
    std::vector<std::vector<float>> sc;
    auto s2 = s0;
    eng.score(in, tg, s2, sc);
    MatrixRM pred;
    auto s3 = s0;
    eng.predict(in, s3, pred);
    EXPECT_EQ(s1, s2);
    EXPECT_EQ(s1, s3);
    for (size_t r = 0; r < in.size(); ++r) {
      for (size_t t = 0; t < in[r].size(); ++t) EXPECT_EQ(sc[r][t], full[r](Eigen::Index(t), tg[r][t]));
      // predict after the last input is the last row of logprobs; with no input it is the state's h.
      if (!in[r].empty()) {
        EXPECT_TRUE(pred.row(Eigen::Index(r)) == full[r].row(full[r].rows() - 1)) << "row " << r;
      } else {
        RefState ref = to_ref(s0[r]);
        auto want = reference_logprobs(m, ref.h.back());
        for (int v = 0; v < m.vocab_size(); ++v)
          EXPECT_NEAR(pred(Eigen::Index(r), v), want[size_t(v)], kReferenceTol);
      }
    }
  }
}

TEST(EngineReference, RejectsBadTokensAndStates) {
  auto model = make_model(10, 4, {{5}}, false, 1);
  Engine eng(model, 1);
  std::vector<State> st(1, State::zeros(*model));
  EXPECT_THROW(eng.advance({{1, 10}}, st), InputError);
  EXPECT_THROW(eng.advance({{-1}}, st), InputError);
  EXPECT_THROW(eng.advance({{1}, {2}}, st), UsageError);
  std::vector<std::vector<float>> out;
  EXPECT_THROW(eng.score({{1, 2}}, {{3}}, st, out), UsageError);
  st[0].c[0].pop_back();
  EXPECT_THROW(eng.advance({{1}}, st), UsageError);
}
