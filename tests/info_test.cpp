// `lstmlm info`: Keras-style counts for known shapes (derived by hand in the comments), the trainable
// convention, JSON output, warnings, and the bundled model.
#include <gtest/gtest.h>

#include <limits>

#include "lstmlm/engine.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/summary.hpp"
#include "model_files.hpp"
#include "test_util.hpp"

using lstmlm::Model;
using lstmlm::test::TempDir;
using nlohmann::json;

namespace {

// Embedding(554, 100) -> LSTM(100) -> Dense(554), the Keras model this project was born from (README).
lstmlm::test::ModelFiles keras_shape() { return lstmlm::test::files_of(*Model::random(554, 100, 100, 1, 5)); }

}  // namespace

TEST(Info, KerasShapeTotalsInText) {
  TempDir dir("info_text");
  auto f = keras_shape();
  f.config["source"] = {{"framework", "keras"}, {"trainable", {{"embedding", false}}}};
  f.write(dir.path());
  auto r = lstmlm::test::run_cli("info -m '" + dir.path().string() + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  // 554*100 = 55,400; 4*100*(100+100) + 4*100 = 80,400; 554*100 + 554 = 55,954; sum 191,754.
  EXPECT_NE(r.out.find("embedding (Embedding)       (None, T, 100)      55,400        frozen"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("lstm_l0 (LSTM)              (None, T, 100)      80,400"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decoder (Dense)             (None, T, 554)      55,954"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Total params: 191,754\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Trainable params: 136,354\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Non-trainable params: 55,400\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lstmlm format v1"), std::string::npos);
  EXPECT_NE(r.out.find("Source: {\"framework\":\"keras\""), std::string::npos);
  EXPECT_EQ(r.err, "");
}

TEST(Info, KerasShapeInJson) {
  TempDir dir("info_json");
  auto f = keras_shape();
  f.write(dir.path());
  auto r = lstmlm::test::run_cli("info --json -m '" + dir.path().string() + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["total_params"], 191754);
  ASSERT_EQ(j["layers"].size(), 3u);
  EXPECT_EQ(j["layers"][0]["params"], 55400);
  EXPECT_EQ(j["layers"][1]["params"], 80400);
  EXPECT_EQ(j["layers"][2]["params"], 55954);
  EXPECT_EQ(j["layers"][1]["output_shape"], json::parse("[null, null, 100]"));
  EXPECT_EQ(j["layers"][2]["type"], "Dense");
  // No source.trainable: the split is unknown, not guessed.
  EXPECT_TRUE(j["trainable_params"].is_null());
  EXPECT_TRUE(j["layers"][0]["trainable"].is_null());
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["source"]["framework"], "random");
  EXPECT_EQ(j["warnings"], json::array());
  auto m = Model::load(dir.path().string());
  EXPECT_EQ(j["memory_bytes"], m->memory_bytes() + lstmlm::packed_bytes(*m));
  EXPECT_EQ(j["total_params"], m->parameter_count());
}

TEST(Info, TiedProjectedAndOneHotCounts) {
  // Tied, two layers, the second projected: V=10, E=4; layer 0: H=6 in=4 -> 4*6*(4+6) + 24 = 264;
  // layer 1: H=8, P=4, in=6 -> w_ih 32*6=192, w_hh 32*4=128, bias 32, w_hr 4*8=32 -> 384;
  // tied decoder: only its bias, 10. Embedding 40. Total 698.
  auto c = lstmlm::parse_config(json::parse(R"({"format":"lstmlm","format_version":1,"vocab_size":10,
      "embedding_dim":4,"layers":[{"hidden_size":6,"recurrent_activation":"sigmoid"},
      {"hidden_size":8,"proj_size":4,"recurrent_activation":"hard_sigmoid"}],"output":{"tied":true},
      "tokenizer":{"type":"char"},"source":{"trainable":{"decoder":false}}})"),
                                "config.json");
  lstmlm::Weights w;
  w.embedding = lstmlm::MatrixRM::Constant(10, 4, 0.5f);
  w.layers.resize(2);
  w.layers[0] = {lstmlm::MatrixRM::Zero(24, 4), lstmlm::MatrixRM::Zero(24, 6), Eigen::VectorXf::Zero(24), {}};
  w.layers[1] = {lstmlm::MatrixRM::Zero(32, 6), lstmlm::MatrixRM::Zero(32, 4), Eigen::VectorXf::Zero(32),
                 lstmlm::MatrixRM::Zero(4, 8)};
  w.decoder_bias = Eigen::VectorXf::Zero(10);
  std::vector<std::string> toks;
  for (int i = 0; i < 10; ++i) toks.push_back(std::string(1, static_cast<char>('a' + i)));
  auto m = Model::create(c, lstmlm::Vocab(toks), w);
  auto s = lstmlm::summarize(*m);
  ASSERT_EQ(s.layers.size(), 4u);
  EXPECT_EQ(s.layers[0].params, 40);
  EXPECT_EQ(s.layers[1].params, 264);
  EXPECT_EQ(s.layers[2].params, 384);
  EXPECT_EQ(s.layers[2].width, 4);
  EXPECT_EQ(s.layers[3].params, 10);
  EXPECT_EQ(s.total_params, 698);
  EXPECT_EQ(s.total_params, m->parameter_count());
  EXPECT_EQ(s.non_trainable_params, 10);  // only the decoder is listed as frozen
  EXPECT_EQ(s.trainable_params, 688);

  // One-hot input (E=0): no embedding layer; V=5, H=2: 4*2*(5+2) + 8 = 64; decoder 5*2 + 5 = 15.
  auto oh = Model::random(5, 0, 2, 1, 1);
  auto s2 = lstmlm::summarize(*oh);
  ASSERT_EQ(s2.layers.size(), 2u);
  EXPECT_EQ(s2.layers[0].params, 64);
  EXPECT_EQ(s2.layers[1].params, 15);
  EXPECT_EQ(s2.total_params, 79);
}

TEST(Info, LoaderWarningsAreShown) {
  TempDir dir("info_warn");
  auto f = lstmlm::test::files_of(*Model::random(5, 3, 2, 1, 1));
  f.tensors[0].values[0] = std::numeric_limits<float>::quiet_NaN();  // embedding.weight
  f.rebuild_weights();
  f.write(dir.path());
  auto r = lstmlm::test::run_cli("info -m '" + dir.path().string() + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Warning: " + (dir.path() / "weights.safetensors").string() +
                       ": tensor 'embedding.weight' holds 1 non-finite value"),
            std::string::npos)
      << r.out;
  r = lstmlm::test::run_cli("info --json -m '" + dir.path().string() + "'");
  EXPECT_EQ(json::parse(r.out)["warnings"].size(), 1u);
}

TEST(Info, BundledModelMatchesItsKerasShape) {
  auto dir = lstmlm::test::source_dir() / "models" / "fairytales-word";
  if (!std::filesystem::exists(dir / "config.json")) GTEST_SKIP() << "models/fairytales-word not present";
  auto r = lstmlm::test::run_cli("info --json -m '" + dir.string() + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["total_params"], 191754);
}

TEST(Info, NamesTheKernelsOfEveryPrecisionAndRefusesABadIsaBeforePrinting) {
  TempDir dir("info_kernels");
  keras_shape().write(dir.path());
  const std::string args = "info -m '" + dir.path().string() + "'";
  auto r = lstmlm::test::run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Kernels: " + lstmlm::kernels_for(lstmlm::Precision::Fp32) + ", " +
                       lstmlm::kernels_for(lstmlm::Precision::Bf16) + ", " +
                       lstmlm::kernels_for(lstmlm::Precision::Int8)),
            std::string::npos)
      << r.out;
  auto j = lstmlm::test::run_cli(args + " --json");
  ASSERT_EQ(j.status, 0) << j.err;
  EXPECT_EQ(json::parse(j.out)["kernels"]["int8"], lstmlm::kernels_for(lstmlm::Precision::Int8));
  // The level where bf16 is refused: int8 there names its kernel (on x86-64 AVX-VNNI where the CPU has it,
  // vpmaddubsw otherwise).
#if defined(__aarch64__)
  setenv("LSTMLM_ISA", "neon", 1);
#else
  setenv("LSTMLM_ISA", "avx2", 1);
#endif
  auto capped = lstmlm::test::run_cli(args);
  EXPECT_NE(capped.out.find(", bf16/refused, " + lstmlm::kernels_for(lstmlm::Precision::Int8)),
            std::string::npos)
      << capped.out;
  setenv("LSTMLM_ISA", "pentium", 1);
  auto bad = lstmlm::test::run_cli(args);
  unsetenv("LSTMLM_ISA");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_NE(bad.err.find("LSTMLM_ISA='pentium'"), std::string::npos) << bad.err;
}
