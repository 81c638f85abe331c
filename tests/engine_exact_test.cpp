// The double-precision path (engine/exact.cpp) of a class-factored model with direct connections: a row's
// scores do not depend on its batch, the full distribution sums to 1 and holds the scored values, state
// carried across calls gives the scores of one call, and the OOV zero input is not scored.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine_models.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"

namespace {

std::shared_ptr<const lstmlm::Model> class_model(lstmlm::ExpKind exp, int64_t direct) {
  const int V = 9, H = 4, C = 3;
  lstmlm::ModelConfig c;
  c.format_version = 5;
  c.vocab_size = V;
  c.embedding_dim = 0;
  lstmlm::LayerConfig l;
  l.cell = lstmlm::CellType::Rnn;
  l.hidden_size = H;
  l.activation = lstmlm::Activation::Sigmoid;
  c.layers.push_back(l);
  c.classes = C;
  c.direct_size = direct;
  c.direct_order = direct ? 3 : 0;
  c.exp = exp;
  c.tokenizer.eos_token = "t0";
  c.tokenizer.oov_input = lstmlm::OovInput::Zero;
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 1.0f);
  auto fill = [&](auto& m) {
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
  };
  lstmlm::Weights w;
  lstmlm::LayerWeights lw;
  lw.w_ih.resize(H, V);
  lw.w_hh.resize(H, H);
  lw.bias = Eigen::VectorXf::Zero(H);
  fill(lw.w_ih);
  fill(lw.w_hh);
  w.layers.push_back(lw);
  w.decoder.resize(V, H);
  fill(w.decoder);
  w.decoder_bias = Eigen::VectorXf::Zero(V);
  w.class_weight.resize(C, H);
  fill(w.class_weight);
  w.class_bias = Eigen::VectorXf::Zero(C);
  w.word_class = {0, 0, 0, 1, 1, 2, 2, 2, 2};
  w.direct.resize(direct);
  fill(w.direct);
  std::vector<std::string> tokens;
  for (int i = 0; i < V; ++i) tokens.push_back("t" + std::to_string(i));
  return lstmlm::Model::create(c, lstmlm::Vocab(tokens), w);
}

TEST(EngineExact, RowsAreIndependentOfTheirBatchAndCallsCarryTheState) {
  for (auto exp : {lstmlm::ExpKind::Rnnlm, lstmlm::ExpKind::Exact}) {
    auto m = class_model(exp, 64);
    lstmlm::Engine e(m, 1);
    EXPECT_EQ(e.kernels(), "fp64/exact");
    const lstmlm::Sequences in = {{0, 3, 9, 5, 1}, {0, 8}, {0, 2, 2, 2, 7, 7, 4}};
    const lstmlm::Sequences tg = {{3, 9, 5, 1, 0}, {8, 6}, {2, 2, 2, 7, 7, 4, 0}};
    std::vector<lstmlm::State> st(3, lstmlm::State::zeros(*m));
    std::vector<std::vector<float>> lp;
    std::vector<std::vector<double>> lp64;
    e.score(in, tg, st, lp, lstmlm::StepMeasures{nullptr, nullptr, nullptr, &lp64});
    EXPECT_TRUE(std::isnan(lp64[0][1]));  // the target V: an OOV fed as the zero input, not scored
    for (size_t r = 0; r < in.size(); ++r) {
      std::vector<lstmlm::State> one(1, lstmlm::State::zeros(*m));
      std::vector<std::vector<float>> l1;
      std::vector<std::vector<double>> d1;
      e.score({in[r]}, {tg[r]}, one, l1, lstmlm::StepMeasures{nullptr, nullptr, nullptr, &d1});
      for (size_t t = 0; t < in[r].size(); ++t)
        if (!std::isnan(lp64[r][t])) {
          EXPECT_EQ(d1[0][t], lp64[r][t]) << r << " " << t;
        }
      EXPECT_EQ(one[0].h64, st[r].h64);
      EXPECT_EQ(one[0].history, st[r].history);
    }
    // Row 2 in two calls, the state carried: the same values as in one.
    std::vector<lstmlm::State> two(1, lstmlm::State::zeros(*m));
    std::vector<std::vector<float>> a;
    std::vector<std::vector<double>> da, db;
    e.score({{0, 2, 2}}, {{2, 2, 2}}, two, a, lstmlm::StepMeasures{nullptr, nullptr, nullptr, &da});
    e.score({{2, 7, 7, 4}}, {{7, 7, 4, 0}}, two, a, lstmlm::StepMeasures{nullptr, nullptr, nullptr, &db});
    da[0].insert(da[0].end(), db[0].begin(), db[0].end());
    EXPECT_EQ(da[0], lp64[2]);
  }
}

TEST(EngineExact, TheFullDistributionSumsToOneAndHoldsTheScores) {
  auto m = class_model(lstmlm::ExpKind::Rnnlm, 64);
  lstmlm::Engine e(m, 1);
  const lstmlm::Sequences in = {{0, 4, 2}};
  std::vector<lstmlm::State> st(1, lstmlm::State::zeros(*m));
  std::vector<lstmlm::MatrixRM> full;
  e.logprobs(in, st, full);
  for (Eigen::Index t = 0; t < full[0].rows(); ++t) {
    double sum = 0;
    for (Eigen::Index w = 0; w < full[0].cols(); ++w) sum += std::exp(double(full[0](t, w)));
    EXPECT_NEAR(sum, 1.0, 1e-6);
    for (int32_t target = 0; target < 9; ++target) {
      std::vector<lstmlm::State> s2(1, lstmlm::State::zeros(*m));
      std::vector<std::vector<float>> lp;
      lstmlm::Sequences prefix = {std::vector<int32_t>(in[0].begin(), in[0].begin() + t + 1)};
      lstmlm::Sequences tg = {std::vector<int32_t>(size_t(t + 1), 0)};
      tg[0].back() = target;
      e.score(prefix, tg, s2, lp);
      EXPECT_NEAR(lp[0].back(), full[0](t, target), 1e-6);
    }
  }
}

TEST(EngineExact, NoDirectConnectionsAndTheLoaderChecks) {
  auto m = class_model(lstmlm::ExpKind::Rnnlm, 0);
  EXPECT_TRUE(m->config().exact_path());
  EXPECT_TRUE(lstmlm::State::zeros(*m).history.empty());
  // A class map whose classes are not contiguous is refused naming the tensor.
  lstmlm::Weights w = m->weights();
  w.word_class = {0, 1, 0, 1, 1, 2, 2, 2, 2};
  try {
    lstmlm::Model::create(m->config(), m->vocab(), w);
    ADD_FAILURE() << "accepted";
  } catch (const lstmlm::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("class.word_class': the words of class 0 are not contiguous"),
              std::string::npos)
        << e.what();
  }
}

// Every cell, option, head and tied output of the engine tests' models, on the double-precision path: the
// model with one class (p(class) = 1, so p(w|h) is the full softmax) gives the fp32 kernels' log-probs of the
// same model within fp32's error.
TEST(EngineExact, EveryCellAsTheFp32Kernels) {
  std::mt19937_64 rng(3);
  for (const auto& [name, m] : lstmlm::test::test_models()) {
    SCOPED_TRACE(name);
    lstmlm::ModelConfig c = m->config();
    c.format_version = 5;
    c.classes = 1;
    lstmlm::Weights w = m->weights();
    w.class_weight = lstmlm::MatrixRM::Zero(1, c.decoder_input_size());
    w.class_bias = Eigen::VectorXf::Zero(1);
    w.word_class.assign(size_t(c.vocab_size), 0);
    auto one_class = lstmlm::Model::create(c, m->vocab(), w);
    ASSERT_TRUE(one_class->config().exact_path());
    const int V = c.vocab_size;
    const lstmlm::Sequences in = {lstmlm::test::random_tokens(rng, V, 9),
                                  lstmlm::test::random_tokens(rng, V, 4)};
    const lstmlm::State start = lstmlm::test::random_state(*m, rng);
    std::vector<lstmlm::State> a(2, start), b(2, start);
    std::vector<lstmlm::MatrixRM> want, got;
    lstmlm::Engine(m, 1).logprobs(in, a, want);
    lstmlm::Engine(one_class, 1).logprobs(in, b, got);
    for (size_t r = 0; r < in.size(); ++r) {
      ASSERT_EQ(got[r].rows(), want[r].rows());
      EXPECT_LT((got[r] - want[r]).cwiseAbs().maxCoeff(), 2e-5f) << "row " << r;
      for (size_t k = 0; k < a[r].h.size(); ++k)
        for (size_t j = 0; j < a[r].h[k].size(); ++j) EXPECT_NEAR(b[r].h[k][j], a[r].h[k][j], 2e-5f);
    }
  }
}

}  // namespace
