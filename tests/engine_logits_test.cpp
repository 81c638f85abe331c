// The engine's unnormalised outputs (score with StepMeasures::logits, predict_logits): each equals the full
// logits row's entry, which is the log-prob plus the row's log-sum-exp (computed here in double from the
// engine's own log-probs: ln p_j - ln p_i = z_j - z_i), at every precision, with and without a head, for rows
// of different lengths in one batch; the double path refuses them.
#include <gtest/gtest.h>

#include <cmath>

#include "engine_models.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"

namespace {

// The logit z_t given the row's log-probs lp and one known logit z_ref of entry ref: z_t = z_ref + lp_t -
// lp_ref.
double logit_from(const float* lp, int t, int ref, double z_ref) {
  return z_ref + double(lp[t]) - double(lp[ref]);
}

}  // namespace

TEST(EngineLogits, ScoreTargetsAndPredictRowsAgreeWithTheLogProbs) {
  using lstmlm::test::LayerSpec;
  const std::vector<lstmlm::DenseConfig> head = {{12, lstmlm::Activation::Tanh}};
  int ran = 0;
  for (bool with_head : {false, true})
    for (lstmlm::Precision p : {lstmlm::Precision::Fp32, lstmlm::Precision::Bf16, lstmlm::Precision::Int8}) {
      SCOPED_TRACE(std::string(lstmlm::precision_name(p)) + (with_head ? " head" : ""));
      // V 150: two full panels of 64 and a tail.
      auto model = lstmlm::test::make_model(150, 10, {LayerSpec(20)}, false, 7, 0.5f,
                                            with_head ? head : std::vector<lstmlm::DenseConfig>{});
      lstmlm::EngineOptions eo;
      eo.threads = 1;
      eo.precision = p;
      std::unique_ptr<lstmlm::Engine> engine;
      try {
        engine = std::make_unique<lstmlm::Engine>(model, eo);
      } catch (const lstmlm::UsageError&) {
        continue;  // a precision this CPU refuses
      }
      ++ran;
      const lstmlm::Sequences inputs = {{1, 5, 9, 3, 2}, {4, 4}, {7}};
      const lstmlm::Sequences targets = {{5, 9, 3, 2, 149}, {4, 0}, {128}};
      std::vector<lstmlm::State> s1(3, lstmlm::State::zeros(*model)), s2 = s1;
      std::vector<std::vector<float>> logits, lp;
      lstmlm::StepMeasures m;
      m.logits = true;
      engine->score(inputs, targets, s1, logits, m);
      std::vector<lstmlm::MatrixRM> rows;
      engine->logprobs(inputs, s2, rows);
      for (size_t r = 0; r < inputs.size(); ++r) {
        // The last step's full logits row, unnormalised, after the whole row.
        std::vector<lstmlm::State> s3(1, lstmlm::State::zeros(*model));
        lstmlm::MatrixRM z;
        engine->predict_logits({inputs[r]}, s3, z);
        const size_t last = inputs[r].size() - 1;
        const int t = targets[r][last];
        EXPECT_NEAR(logits[r][last], z(0, t), 1e-4 * std::max(1.0f, std::fabs(z(0, t))));
        // Every step: the target's logit differs from the log-prob by the row's normaliser, the same for
        // every entry of the row: z_t - lp_t == z_0 - lp_0 with z_0 from a second target-only call.
        for (size_t k = 0; k < inputs[r].size(); ++k) {
          const float* row = rows[r].row(Eigen::Index(k)).data();
          lstmlm::Sequences in0 = {
              std::vector<int32_t>(inputs[r].begin(), inputs[r].begin() + ptrdiff_t(k) + 1)};
          lstmlm::Sequences tg0 = in0;
          tg0[0].back() = 0;
          std::fill(tg0[0].begin(), tg0[0].end() - 1, 0);
          std::vector<lstmlm::State> s4(1, lstmlm::State::zeros(*model));
          std::vector<std::vector<float>> z0;
          engine->score(in0, tg0, s4, z0, m);
          const double want = logit_from(row, targets[r][k], 0, z0[0].back());
          EXPECT_NEAR(logits[r][k], want, 2e-4 * std::max(1.0, std::fabs(want)))
              << "row " << r << " step " << k;
          // Not the log-prob: the normaliser of a random model is far from 0.
          EXPECT_GT(std::fabs(logits[r][k] - row[targets[r][k]]), 1e-2);
        }
      }
    }
  EXPECT_GE(ran, 2);  // fp32 runs everywhere, with and without the head
}

TEST(EngineLogits, TheDoublePathRefuses) {
  using lstmlm::test::LayerSpec;
  auto model = lstmlm::test::make_model(30, 0, {LayerSpec::rnn(6, lstmlm::Activation::Sigmoid)}, false, 3);
  lstmlm::Engine engine(model, 1);
  std::vector<lstmlm::State> s(1, lstmlm::State::zeros(*model));
  std::vector<std::vector<float>> out;
  lstmlm::StepMeasures m;
  m.logits = true;
  EXPECT_THROW(engine.score({{1, 2}}, {{2, 3}}, s, out, m), lstmlm::UsageError);
  lstmlm::MatrixRM z;
  EXPECT_THROW(engine.predict_logits({{1}}, s, z), lstmlm::UsageError);
}
