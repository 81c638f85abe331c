// A model loaded from its files keeps its big matrices there and is packed from them a block of rows at a
// time: the packed model computes the same bits as the same model built in memory, at every precision; the
// loaded model holds none of the matrices' floats until weights() asks for them; and layer 0's layout (a
// folded table or the embedding's rows through W_ih) follows the byte rule of fold_input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "engine/packed_model.hpp"
#include "engine_models.hpp"
#include "lstmlm/engine.hpp"
#include "model_files.hpp"

namespace {

namespace fs = std::filesystem;
using namespace lstmlm;

bool file_packing_refused(Precision p) { return kernels_for(p).ends_with("/refused"); }

// A scratch directory removed when the test ends.
struct FilePackingDir {
  fs::path path;
  explicit FilePackingDir(const std::string& name)
      : path(fs::temp_directory_path() / ("lstmlm_file_packing_" + name + "_" + std::to_string(::getpid()))) {
  }
  ~FilePackingDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(EngineFilePacking, PackedFromTheFileGivesTheBitsOfTheModelInMemory) {
  for (const auto& nm : test::test_models()) {
    SCOPED_TRACE(nm.name);
    if (!nm.model->config().head.empty()) continue;  // test::files_of writes no head layers
    FilePackingDir dir(nm.name);
    test::files_of(*nm.model).write(dir.path);
    const auto loaded = Model::load(dir.path.string());
    // The same floats sampled: the same fingerprint, though none of the matrices was read into memory.
    EXPECT_EQ(loaded->fingerprint(), nm.model->fingerprint());
    EXPECT_EQ(loaded->parameter_count(), nm.model->parameter_count());
    for (Precision p : {Precision::Fp32, Precision::Bf16, Precision::Int8}) {
      if (file_packing_refused(p)) continue;
      SCOPED_TRACE(std::string(precision_name(p)));
      Engine a(nm.model, EngineOptions{.threads = 1, .precision = p});
      Engine b(loaded, EngineOptions{.threads = 2, .precision = p, .row_split_bytes = 0});
      std::mt19937_64 rng(7);
      Sequences in{test::random_tokens(rng, nm.model->vocab_size(), 11),
                   test::random_tokens(rng, nm.model->vocab_size(), 3)};
      std::vector<State> sa{State::zeros(*nm.model), State::zeros(*nm.model)}, sb = sa;
      std::vector<MatrixRM> la, lb;
      a.logprobs(in, sa, la);
      b.logprobs(in, sb, lb);
      ASSERT_EQ(la.size(), lb.size());
      for (size_t r = 0; r < la.size(); ++r) EXPECT_TRUE(test::same(la[r], lb[r])) << "row " << r;
      EXPECT_EQ(sa, sb);
    }
    // Packing read no matrix into the model: what it holds is the biases (and a head's small layers).
    EXPECT_EQ(loaded->held_weights().layers[0].w_hh.size(), 0);
    EXPECT_LT(loaded->memory_bytes(), nm.model->memory_bytes());
    // weights() reads them on demand: the floats of the file.
    const Weights& w = loaded->weights();
    EXPECT_EQ(w.layers[0].w_hh, nm.model->weights().layers[0].w_hh);
    EXPECT_EQ(w.layers.back().w_ih, nm.model->weights().layers.back().w_ih);
    EXPECT_EQ(loaded->decoder(), nm.model->decoder());
  }
}

TEST(EngineFilePacking, AnotherPrecisionIsPackedFromTheFileAfterKeepOnlyPacked) {
  const auto models = test::test_models();
  const auto& nm = models[1];
  FilePackingDir dir("release");
  test::files_of(*nm.model).write(dir.path);
  const auto loaded = Model::load(dir.path.string());
  keep_only_packed(loaded, Precision::Fp32);
  const Precision other = file_packing_refused(Precision::Int8) ? Precision::Fp32 : Precision::Int8;
  Engine a(nm.model, EngineOptions{.threads = 1, .precision = other});
  Engine b(loaded, EngineOptions{.threads = 1, .precision = other});
  std::mt19937_64 rng(3);
  Sequences in{test::random_tokens(rng, nm.model->vocab_size(), 6)};
  std::vector<State> sa{State::zeros(*nm.model)}, sb = sa;
  std::vector<MatrixRM> la, lb;
  a.logprobs(in, sa, la);
  b.logprobs(in, sb, lb);
  EXPECT_TRUE(test::same(la[0], lb[0]));
}

// A GRU with reset_after and no bias_hh in its file: the absent bias is 3H zeros, sized from the config, as
// W_hh stays in the file.
TEST(EngineFilePacking, AnAbsentGruBiasIsSizedFromTheConfig) {
  const auto models = test::test_models();
  const auto it =
      std::find_if(models.begin(), models.end(), [](const auto& m) { return m.name == "v3_gru"; });
  ASSERT_NE(it, models.end());
  auto files = test::files_of(*it->model);
  std::erase_if(files.tensors, [](const test::Tensor& t) { return t.name == "gru.bias_hh_l0"; });
  files.rebuild_weights();
  FilePackingDir dir("gru_bias");
  files.write(dir.path);
  const auto loaded = Model::load(dir.path.string());
  const auto& b = loaded->held_weights().layers[0].bias_hh;
  ASSERT_EQ(b.size(), 3 * it->model->config().layers[0].hidden_size);
  EXPECT_TRUE(b.isZero());
}

// fold_input by hand: the table is V x G x 4 bytes; the unfolded layout holds V x E x 4 bytes of embedding
// and G x E weights of the precision.
TEST(EngineFilePacking, LayerZeroLayoutFollowsTheByteRule) {
  auto config = [](int V, int E) {
    ModelConfig c;
    c.vocab_size = V;
    c.embedding_dim = E;
    return c;
  };
  for (Precision p : {Precision::Fp32, Precision::Bf16, Precision::Int8}) {
    // MEDIUM (V 10,000, E 650, H 650): a 104 MB table against 26 MB + 6.8 MB (fp32): the embedding's rows.
    EXPECT_FALSE(engine::fold_input(config(10000, 650), 2600, p));
    // The icefall decoder (V 500, E 2048, H 2048): 16.4 MB against 4.1 MB + 16.8 MB at int8: folded.
    EXPECT_TRUE(engine::fold_input(config(500, 2048), 8192, p));
    // At most 4 MiB: folded whatever it replaces (1024 x 1024 x 4 bytes).
    EXPECT_TRUE(engine::fold_input(config(1024, 1), 1024, p));
    EXPECT_FALSE(engine::fold_input(config(1025, 1), 1024, p));
    // One-hot: the table is W_ih.
    EXPECT_TRUE(engine::fold_input(config(100000, 0), 4096, p));
  }
  // V 2000, E 160, G 640 (the test model no_table_4x): 5.1 MB against 1.28 MB + 0.41 MB: not folded.
  EXPECT_FALSE(engine::fold_input(config(2000, 160), 640, Precision::Fp32));
}

// --fold-embedding overrides the rule both ways, except for a one-hot model, whose table is W_ih itself.
TEST(EngineFilePacking, FoldChoiceOverridesTheByteRule) {
  ModelConfig medium;
  medium.vocab_size = 10000;
  medium.embedding_dim = 650;
  ModelConfig one_hot = medium;
  one_hot.embedding_dim = 0;
  for (Precision p : {Precision::Fp32, Precision::Int8}) {
    EXPECT_TRUE(engine::fold_input(medium, 2600, p, EmbeddingFold::Always));
    EXPECT_FALSE(engine::fold_input(medium, 2600, p, EmbeddingFold::Never));
    EXPECT_FALSE(engine::fold_input(medium, 2600, p, EmbeddingFold::Auto));
    EXPECT_TRUE(engine::fold_input(one_hot, 2600, p, EmbeddingFold::Never));
  }
}

}  // namespace
