// keep_only_packed: a model packed for one precision and its float layer weights freed computes the same
// bits as before, for every cell and precision; another precision is refused with the reason; the model's
// counts (and info's, per layer) are unchanged and its memory smaller.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine_models.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/report/info.hpp"
#include "lstmlm/summary.hpp"

namespace {

using namespace lstmlm;

bool refused(Precision p) { return kernels_for(p).ends_with("/refused"); }

TEST(EngineRelease, APackedOnlyModelGivesTheSameBitsAndRefusesAnotherPrecision) {
  const auto kept = test::test_models();
  for (Precision p : {Precision::Fp32, Precision::Bf16, Precision::Int8}) {
    if (refused(p)) continue;  // bf16 where the CPU's best level is AVX2 (tested in kernels_lowp_test)
    const auto twins = test::test_models();  // the same seeds: the same weights, released below
    for (size_t i = 0; i < kept.size(); ++i) {
      SCOPED_TRACE(kept[i].name + " " + std::string(precision_name(p)));
      const Model& a = *kept[i].model;
      const auto& twin = twins[i].model;
      const auto bytes = twin->memory_bytes();
      const ModelSummary before = summarize(*twin);
      keep_only_packed(twin, p);
      EXPECT_TRUE(twin->layer_weights_released());
      EXPECT_EQ(twin->weights().layers[0].w_hh.size(), 0);
      EXPECT_EQ(twin->parameter_count(), a.parameter_count());
      EXPECT_LT(twin->memory_bytes(), bytes);
      // What info and a server's /v1/models print: the counts made from the weights before they went,
      // and the bytes of the precision kept.
      const ModelSummary after = summarize(*twin);
      ASSERT_EQ(after.layers.size(), before.layers.size());
      for (size_t l = 0; l < after.layers.size(); ++l)
        EXPECT_EQ(after.layers[l].params, before.layers[l].params);
      EXPECT_EQ(after.total_params, before.total_params);
      const auto info = nlohmann::json::parse(report::model_info_json(*twin, p));
      EXPECT_EQ(info["total_params"].get<int64_t>(), before.total_params);
      EXPECT_EQ(info["memory_bytes"].get<size_t>(), twin->memory_bytes() + packed_bytes(*twin, p));
      Engine ea(kept[i].model, EngineOptions{.threads = 1, .precision = p});
      Engine eb(twin, EngineOptions{.threads = 1, .precision = p});
      std::mt19937_64 rng(i + 1);
      Sequences in{test::random_tokens(rng, a.vocab_size(), 9), test::random_tokens(rng, a.vocab_size(), 4)};
      std::vector<State> sa{State::zeros(a), State::zeros(a)}, sb = sa;
      std::vector<MatrixRM> la, lb;
      ea.logprobs(in, sa, la);
      eb.logprobs(in, sb, lb);
      ASSERT_EQ(la.size(), lb.size());
      for (size_t r = 0; r < la.size(); ++r) EXPECT_EQ(la[r], lb[r]) << "row " << r;
      EXPECT_EQ(sa, sb);
      const Precision other = p == Precision::Fp32 ? Precision::Int8 : Precision::Fp32;
      try {
        Engine e(twin, EngineOptions{.threads = 1, .precision = other});
        ADD_FAILURE() << "an engine of " << precision_name(other) << " ran on weights packed for "
                      << precision_name(p);
      } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("packed for " + std::string(precision_name(p))),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

}  // namespace
