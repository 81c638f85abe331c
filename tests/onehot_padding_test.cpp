// A one-hot model (embedding_dim 0) without pad_id pads a --pad-to window with zero input vectors, as Keras'
// pad_sequences pads a one-hot array: the engine takes the input id V as that vector (its folded input
// term is the bias alone), only for one-hot models and only as an input; `info` says how a model pads.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/window.hpp"
#include "model_files.hpp"
#include "test_util.hpp"

namespace {

using namespace lstmlm;

constexpr int kV = 7, kH = 5;

// A one-hot model with random weights, and the same model with the input column of token 2 zeroed.
std::shared_ptr<const Model> onehot(bool zero_column_2 = false) {
  auto r = Model::random(kV, 0, kH, 2, 11);
  if (!zero_column_2) return r;
  Weights w = r->weights();
  w.layers[0].w_ih.col(2).setZero();
  std::vector<std::string> tokens;
  for (int i = 0; i < kV; ++i) tokens.push_back(r->vocab().token(i));
  return Model::create(r->config(), Vocab(tokens), w);
}

State after(const std::shared_ptr<const Model>& m, const std::vector<int32_t>& ids) {
  Engine e(m, 1);
  std::vector<State> st{State::zeros(*m)};
  e.advance({ids}, st);
  return st[0];
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

TEST(OnehotPadding, IdVIsTheZeroInputVector) {
  auto m = onehot();
  ASSERT_EQ(m->config().layers[0].recurrent_activation, RecurrentActivation::Sigmoid);
  // From the zero state, a zero input leaves only the bias: c = s(i) tanh(g), h = s(o) tanh(c).
  const State s = after(m, {kV});
  const Eigen::VectorXf& b = m->weights().layers[0].bias;
  for (int j = 0; j < kH; ++j) {
    const float c = sigmoid(b[j]) * std::tanh(b[2 * kH + j]);
    EXPECT_NEAR(s.c[0][size_t(j)], c, 1e-6) << j;
    EXPECT_NEAR(s.h[0][size_t(j)], sigmoid(b[3 * kH + j]) * std::tanh(c), 1e-6) << j;
  }
  // Bit for bit the token whose one-hot column is zero, after other tokens too.
  auto z = onehot(true);
  EXPECT_EQ(after(z, {1, kV, 3, kV, kV}), after(z, {1, 2, 3, 2, 2}));
}

TEST(OnehotPadding, OnlyAOnehotModelTakesItAndOnlyAsAnInput) {
  auto m = onehot();
  Engine e(m, 1);
  std::vector<State> st{State::zeros(*m)};
  EXPECT_THROW(e.advance({{kV + 1}}, st), InputError);
  std::vector<std::vector<float>> out;
  EXPECT_THROW(e.score({{1}}, {{kV}}, st, out), InputError);  // a target is a vocabulary entry
  e.score({{kV, 1}}, {{1, 2}}, st, out);
  EXPECT_EQ(out[0].size(), 2u);
  auto emb = Model::random(kV, 4, kH, 1, 3);
  Engine ee(emb, 1);
  std::vector<State> se{State::zeros(*emb)};
  EXPECT_THROW(ee.advance({{kV}}, se), InputError);
}

TEST(OnehotPadding, PadWindowFeedsZeroVectorsUnlessPadIdIsGiven) {
  auto m = onehot();
  EXPECT_EQ(tasks::window_pad_id(*m), kV);
  EXPECT_EQ(tasks::window_pad_id(*Model::random(kV, 4, kH, 1, 3)), 0);
  Engine e(m, 1);
  tasks::WindowedPredictor wp(e, {tasks::WindowMode::Pad, 4});
  const std::vector<int32_t> ctx{1, 5};
  MatrixRM got;
  wp.predict({std::span<const int32_t>(ctx)}, got);
  MatrixRM want;
  std::vector<State> st{State::zeros(*m)};
  e.predict({{kV, kV, 1, 5}}, st, want);
  EXPECT_EQ(got, want);
  // A config's pad_id is the pad, one-hot or not.
  ModelConfig c = m->config();
  c.tokenizer.pad_id = 3;
  std::vector<std::string> tokens;
  for (int i = 0; i < kV; ++i) tokens.push_back(m->vocab().token(i));
  EXPECT_EQ(tasks::window_pad_id(*Model::create(c, Vocab(tokens), m->weights())), 3);
}

TEST(OnehotPadding, InfoSaysHowAModelPads) {
  test::TempDir dir("onehot_info");
  test::files_of(*onehot()).write(dir / "m");
  auto t = test::run_cli("info -m '" + (dir / "m").string() + "'");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("Padding (--pad-to): zero vectors"), std::string::npos) << t.out;
  auto j = test::run_cli("info --json -m '" + (dir / "m").string() + "'");
  EXPECT_TRUE(nlohmann::json::parse(j.out)["padding"].is_null()) << j.out;
  const std::string word = (test::source_dir() / "models" / "fairytales-word").string();
  auto w = test::run_cli("info -m '" + word + "'");
  EXPECT_NE(w.out.find("Padding (--pad-to): id "), std::string::npos) << w.out;
  EXPECT_TRUE(
      nlohmann::json::parse(test::run_cli("info --json -m '" + word + "'").out)["padding"].is_number());
}

}  // namespace
