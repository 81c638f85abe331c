// Predict task on the hand-built micro model (tests/micro_model.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "micro_model.hpp"

namespace {

using namespace lstmlm;
using namespace lstmlm::tasks;
using test::micro_logprob;

TEST(PredictMicro, TopAfterBAndTiesById) {
  Engine engine(test::micro_model(), 1);
  PredictOptions o;
  o.top = 0;
  auto r = predict(engine, {"a b"}, o, "test", 1);
  EXPECT_EQ(r[0].ids, (std::vector<int32_t>{2, 0, 1}));  // </s> start token fed first
  ASSERT_EQ(r[0].top.size(), 3u);
  // After b: a has e^t/(e^t+2) > 1/(e^t+2), then b and </s> tie and are ordered by id.
  EXPECT_EQ(r[0].top[0].id, 0);
  EXPECT_EQ(r[0].top[1].id, 1);
  EXPECT_EQ(r[0].top[2].id, 2);
  EXPECT_NEAR(r[0].top[0].logprob, micro_logprob(1, 0), 1e-5);
  EXPECT_NEAR(r[0].top[0].prob, std::exp(micro_logprob(1, 0)), 1e-5);
  EXPECT_EQ(r[0].top[0].token, "a");
}

TEST(PredictMicro, IdsPadToAndErrors) {
  Engine engine(test::micro_model(false), 1);
  PredictOptions o;
  o.ids_input = true;
  o.top = 1;
  o.window = {WindowMode::Pad, 3};
  auto r = predict(engine, {"1", "2 1 1 2"}, o, "test", 1);
  EXPECT_EQ(r[0].ids, (std::vector<int32_t>{1}));  // pre-padded with pad_id 0: two pads, then 1
  EXPECT_EQ(r[0].pads, 2u);
  EXPECT_EQ(r[1].ids, (std::vector<int32_t>{1, 1, 2}));  // the last 3 kept
  EXPECT_EQ(r[1].pads, 0u);
  EXPECT_NEAR(r[1].top[0].logprob, std::max(micro_logprob(2, 0), micro_logprob(2, 1)), 1e-5);
  o.window = {};
  EXPECT_THROW(predict(engine, {""}, o, "test", 1), InputError);  // nothing to feed, no bos/eos
}

TEST(PredictMicro, SameResultWhateverTheBatch) {
  Engine engine(test::micro_model(), 2);
  std::vector<std::string> ctx = {"a", "b b a", "", "b", "a a a a a b"};
  PredictOptions o;
  o.top = 0;
  o.batch_size = 1;
  auto one = predict(engine, ctx, o, "t", 1);
  o.batch_size = 3;
  auto three = predict(engine, ctx, o, "t", 1);
  for (size_t i = 0; i < ctx.size(); ++i)
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(one[i].top[k].logprob, three[i].top[k].logprob);
}

}  // namespace

namespace lstmlm::tasks {
namespace {

TEST(PredictTop, TheFewBestAreTheFullSortsFirstTiesById) {
  // A row of 2,000 values of which many tie (20 distinct values): every top from 1 to 20 (the one-pass
  // selection up to 16, the partial sort beyond) is the prefix of the whole row sorted by descending value,
  // ties by ascending id, as std::stable_sort orders it.
  auto model = Model::random(2000, 4, 4, 1, 3);
  std::mt19937_64 rng(17);
  std::vector<float> row(2000);
  for (auto& x : row) x = -static_cast<float>(rng() % 20) * 0.25f;
  std::vector<int32_t> all(row.size());
  std::iota(all.begin(), all.end(), 0);
  std::stable_sort(all.begin(), all.end(),
                   [&](int32_t a, int32_t b) { return row[size_t(a)] > row[size_t(b)]; });
  for (int top = 1; top <= 20; ++top) {
    const auto got = top_candidates(*model, row.data(), top);
    ASSERT_EQ(got.size(), static_cast<size_t>(top));
    for (int i = 0; i < top; ++i)
      EXPECT_EQ(got[size_t(i)].id, all[size_t(i)]) << "top " << top << ", rank " << i;
  }
}

}  // namespace
}  // namespace lstmlm::tasks
