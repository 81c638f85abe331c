// Model::load: a written directory comes back bit for bit; biases are summed; F16 is widened;
// non-finite weights give a warning; tensors land in Eigen storage that is aligned.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine_models.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "model_files.hpp"

using lstmlm::Model;
using lstmlm::test::TempDir;

TEST(Load, RoundTripOfARandomModelIsExact) {
  auto m = Model::random(50, 8, 6, 2, 7);
  TempDir dir("load_rt");
  auto files = lstmlm::test::files_of(*m);
  files.write(dir.path());
  auto l = Model::load(dir.path().string());
  EXPECT_EQ(l->directory(), dir.path().string());
  EXPECT_TRUE(l->warnings().empty());
  EXPECT_EQ(lstmlm::config_to_json(l->config()), lstmlm::config_to_json(m->config()));
  EXPECT_EQ(l->vocab().tokens(), m->vocab().tokens());
  const auto &a = m->weights(), &b = l->weights();
  EXPECT_EQ(a.embedding, b.embedding);
  ASSERT_EQ(b.layers.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(a.layers[k].w_ih, b.layers[k].w_ih);
    EXPECT_EQ(a.layers[k].w_hh, b.layers[k].w_hh);
    EXPECT_EQ(a.layers[k].bias, b.layers[k].bias);
  }
  EXPECT_EQ(a.decoder, b.decoder);
  EXPECT_EQ(a.decoder_bias, b.decoder_bias);
  EXPECT_EQ(l->parameter_count(), m->parameter_count());
  // Eigen's dynamic storage is aligned for its widest vector loads; the kernels rely on it.
  for (const float* p :
       {b.embedding.data(), b.layers[0].w_ih.data(), b.layers[1].w_hh.data(), b.decoder.data()})
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % EIGEN_DEFAULT_ALIGN_BYTES, 0u);
}

TEST(Load, BiasIhAndBiasHhAreSummed) {
  auto m = Model::random(5, 3, 2, 1, 1);
  auto files = lstmlm::test::files_of(*m);
  // bias_ih = i/4 and bias_hh = i/2: small multiples of powers of two, so the float sum 3i/4 is exact.
  for (auto& t : files.tensors)
    if (t.name == "lstm.bias_ih_l0") {
      std::vector<float> hh(t.values.size());
      for (size_t i = 0; i < hh.size(); ++i) {
        hh[i] = static_cast<float>(i) * 0.5f;         // 0, 0.5, 1, ...
        t.values[i] = static_cast<float>(i) * 0.25f;  // bias_ih = 0, 0.25, 0.5, ...
      }
      files.tensors.push_back({"lstm.bias_hh_l0", t.shape, hh});
      break;
    }
  files.rebuild_weights();
  TempDir dir("load_bias");
  files.write(dir.path());
  auto l = Model::load(dir.path().string());
  const auto& bias = l->weights().layers[0].bias;
  ASSERT_EQ(bias.size(), 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(bias[i], 0.75f * static_cast<float>(i));  // 0.25 i + 0.5 i
}

TEST(Load, OnlyBiasHhIsEnough) {
  auto m = Model::random(5, 3, 2, 1, 1);
  auto files = lstmlm::test::files_of(*m);
  for (auto& t : files.tensors)
    if (t.name == "lstm.bias_ih_l0") t.name = "lstm.bias_hh_l0";
  files.rebuild_weights();
  TempDir dir("load_hh");
  files.write(dir.path());
  EXPECT_EQ(Model::load(dir.path().string())->weights().layers[0].bias, m->weights().layers[0].bias);
}

TEST(Load, F16WeightsAreWidened) {
  // A 1-token, E=1, H=1 model written in F16 by hand: every value is 0.5 (half 0x3800), so the widened
  // weights must all read exactly 0.5.
  nlohmann::json h = nlohmann::json::object();
  std::string data;
  auto add = [&](const std::string& n, std::vector<int64_t> shape, size_t count) {
    uint64_t b = data.size();
    for (size_t i = 0; i < count; ++i) data += std::string("\x00\x38", 2);
    h[n] = {{"dtype", "F16"}, {"shape", shape}, {"data_offsets", {b, data.size()}}};
  };
  add("embedding.weight", {1, 1}, 1);
  add("lstm.weight_ih_l0", {4, 1}, 4);
  add("lstm.weight_hh_l0", {4, 1}, 4);
  add("lstm.bias_ih_l0", {4}, 4);
  add("decoder.weight", {1, 1}, 1);
  add("decoder.bias", {1}, 1);
  auto m = Model::random(1, 1, 1, 1, 0);
  auto files = lstmlm::test::files_of(*m);
  files.weights = lstmlm::test::safetensors_bytes(h.dump(), data);
  TempDir dir("load_f16");
  files.write(dir.path());
  auto l = Model::load(dir.path().string());
  EXPECT_EQ(l->weights().layers[0].w_hh, lstmlm::MatrixRM::Constant(4, 1, 0.5f));
  EXPECT_EQ(l->weights().decoder_bias[0], 0.5f);
}

TEST(Load, NonFiniteWeightsGiveOneWarningPerTensorAndTheModelLoads) {
  auto m = Model::random(5, 3, 2, 1, 1);
  auto files = lstmlm::test::files_of(*m);
  for (auto& t : files.tensors) {
    if (t.name == "lstm.weight_hh_l0") {
      t.values[3] = std::numeric_limits<float>::quiet_NaN();
      t.values[5] = std::numeric_limits<float>::infinity();
    }
    if (t.name == "decoder.bias") t.values[0] = -std::numeric_limits<float>::infinity();
  }
  files.rebuild_weights();
  TempDir dir("load_nan");
  files.write(dir.path());
  auto l = Model::load(dir.path().string());
  ASSERT_EQ(l->warnings().size(), 2u);
  EXPECT_NE(l->warnings()[0].find("weights.safetensors: tensor 'lstm.weight_hh_l0' holds 2 non-finite values "
                                  "(first at flat index 3: nan)"),
            std::string::npos)
      << l->warnings()[0];
  EXPECT_NE(l->warnings()[1].find("'decoder.bias' holds 1 non-finite value (first at flat index 0: inf)"),
            std::string::npos)
      << l->warnings()[1];
}

TEST(Load, TiedModelHasNoDecoderWeight) {
  // Tied needs embedding_dim == hidden: V=6, E=H=4.
  auto r = Model::random(6, 4, 4, 1, 3);
  auto files = lstmlm::test::files_of(*r);
  files.config["output"]["tied"] = true;
  std::erase_if(files.tensors, [](const auto& t) { return t.name == "decoder.weight"; });
  files.rebuild_weights();
  TempDir dir("load_tied");
  files.write(dir.path());
  auto l = Model::load(dir.path().string());
  EXPECT_TRUE(l->config().tied);
  EXPECT_EQ(l->decoder(), r->weights().embedding);
  EXPECT_EQ(l->weights().decoder.size(), 0);  // shared, not copied
  EXPECT_EQ(l->decoder().data(), l->weights().embedding.data());
  // Tied: the decoder matrix is the embedding, counted once.
  EXPECT_EQ(l->parameter_count(), r->parameter_count() - 6 * 4);
}

// Every cell of format v3 (tests/engine_models.hpp) written to files and read back gives the model it came
// from, and the engine's numbers on it bit for bit; a GRU's bias_hh stays apart from bias_ih.
TEST(Load, RoundTripOfEveryCellIsExact) {
  for (const auto& nm : lstmlm::test::test_models()) {
    if (nm.name.rfind("v3_", 0) != 0) continue;
    SCOPED_TRACE(nm.name);
    const Model& m = *nm.model;
    TempDir dir("load_" + nm.name);
    lstmlm::test::files_of(m).write(dir.path());
    auto l = Model::load(dir.path().string());
    EXPECT_EQ(lstmlm::config_to_json(l->config()), lstmlm::config_to_json(m.config()));
    EXPECT_EQ(lstmlm::config_to_json(l->config())["format_version"], 3);
    for (size_t k = 0; k < m.weights().layers.size(); ++k) {
      const auto &a = m.weights().layers[k], &b = l->weights().layers[k];
      EXPECT_EQ(a.w_ih, b.w_ih);
      EXPECT_EQ(a.w_hh, b.w_hh);
      EXPECT_EQ(a.bias, b.bias);
      EXPECT_EQ(a.bias_hh, b.bias_hh);
      EXPECT_EQ(a.w_ci, b.w_ci);
      EXPECT_EQ(a.w_co, b.w_co);
    }
    EXPECT_EQ(l->parameter_count(), m.parameter_count());
    lstmlm::Engine e1(nm.model, 1), e2(l, 1);
    std::vector<lstmlm::State> s1 = {lstmlm::State::zeros(m)}, s2 = {lstmlm::State::zeros(*l)};
    std::vector<lstmlm::MatrixRM> o1, o2;
    e1.logprobs({{1, 4, 2, 0, 3}}, s1, o1);
    e2.logprobs({{1, 4, 2, 0, 3}}, s2, o2);
    EXPECT_EQ(o1.at(0), o2.at(0));
    EXPECT_EQ(s1[0].h, s2[0].h);
    EXPECT_EQ(s1[0].c, s2[0].c);
  }
}
