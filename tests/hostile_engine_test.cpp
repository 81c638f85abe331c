// Resource bounds of the engine: a model whose folded layer-0 table would be large, and a very long
// stream, are served within memory proportional to the model (not to V x 4H, not quadratic in length).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/packed_model.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/model.hpp"
#include "reference_lstm.hpp"

namespace {

// Bytes of the canonical weights alone (what any implementation must hold).
size_t canonical_bytes(const lstmlm::Model& m) {
  const auto& w = m.weights();
  size_t n = w.embedding.size() + w.decoder.size() + w.decoder_bias.size();
  for (const auto& l : w.layers) n += l.w_ih.size() + l.w_hh.size() + l.bias.size() + l.w_hr.size();
  return n * sizeof(float);
}

}  // namespace

// V = 100,000, E = 2, H = 16: the folded table [V, 4H] would be 6.4 M floats, 32x the embedding. The
// engine must not build it (it is bounded by 8x the embedding or 4 MB) and must still give the
// reference numbers through the untabled path (layer 0 as a GEMM over the embedding rows).
TEST(HostileEngine, LargeFoldedTableFallsBackToGemm) {
  auto m = lstmlm::Model::random(100000, 2, 16, 1, 11);
  EXPECT_FALSE(engine::packed_model(*m)->folded());
  EXPECT_TRUE(engine::packed_model(*m)->table.empty());
  // Packed copies at most double the canonical weights (padding included); no V x 4H table.
  EXPECT_LT(m->memory_bytes() + lstmlm::packed_bytes(*m), 3 * canonical_bytes(*m));

  std::vector<int32_t> toks{0, 99999, 5, 4242, 77777, 1};
  lstmlm::Engine e(m, 1);
  std::vector<lstmlm::State> st{lstmlm::State::zeros(*m)};
  std::vector<std::vector<float>> out;
  lstmlm::Sequences in{{toks.begin(), toks.end() - 1}}, tgt{{toks.begin() + 1, toks.end()}};
  e.score(in, tgt, st, out);
  auto rs = lstmlm::test::to_ref(lstmlm::State::zeros(*m));
  auto ref = lstmlm::test::reference_forward(*m, in[0], rs);
  ASSERT_EQ(out[0].size(), ref.size());
  for (size_t t = 0; t < ref.size(); ++t)
    EXPECT_NEAR(out[0][t], ref[t][static_cast<size_t>(tgt[0][t])], 1e-4) << "step " << t;
}

// A small table is still folded (the fallback is a memory decision only).
TEST(HostileEngine, SmallTableIsFolded) {
  auto m = lstmlm::Model::random(1000, 8, 16, 1, 11);
  EXPECT_TRUE(engine::packed_model(*m)->folded());
}

// One 200,000-token row: memory is per-step outputs only (the engine streams the steps), and every
// ln p is finite; the test finishes in seconds only if the work is linear in the length.
TEST(HostileEngine, VeryLongStreamIsLinear) {
  auto m = lstmlm::Model::random(50, 4, 8, 1, 3);
  const size_t n = 200000;
  lstmlm::Sequences in(1), tgt(1);
  for (size_t i = 0; i < n; ++i) {
    in[0].push_back(static_cast<int32_t>(i * 7 % 50));
    tgt[0].push_back(static_cast<int32_t>((i * 7 + 3) % 50));
  }
  lstmlm::Engine e(m, 1);
  std::vector<lstmlm::State> st{lstmlm::State::zeros(*m)};
  std::vector<std::vector<float>> out;
  e.score(in, tgt, st, out);
  ASSERT_EQ(out[0].size(), n);
  for (float v : out[0]) ASSERT_TRUE(std::isfinite(v) && v <= 0.0f);
}
