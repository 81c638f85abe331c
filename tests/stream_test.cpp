// The stream type (lstmlm/tasks/stream.hpp): advance gives each stream what it alone gets, in one call or
// token by token; its bytes read back to the same stream; bytes of another model or with a NaN are refused.
#include "lstmlm/tasks/stream.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"

namespace {

using namespace lstmlm;

TEST(Stream, AdvanceTogetherEqualsAloneAndStepByStep) {
  const auto m = Model::random(11, 4, 6, 2, 3);
  Engine engine(m, 1);
  tasks::Stream a{State::zeros(*m), {}, 0}, b = a, alone = a, steps = a;
  std::vector<tasks::Stream*> both{&a, &b};
  std::vector<std::vector<float>> lp;
  tasks::advance(engine, both, {{1, 2, 3}, {4}}, &lp);
  ASSERT_EQ(lp.size(), 2u);
  EXPECT_TRUE(std::isnan(lp[0][0]));  // no next distribution yet: the first token is context only
  std::vector<tasks::Stream*> one{&alone};
  std::vector<std::vector<float>> lp_alone;
  tasks::advance(engine, one, {{1, 2, 3}}, &lp_alone);
  EXPECT_EQ(a.state, alone.state);
  EXPECT_EQ(a.next, alone.next);
  EXPECT_EQ(a.fed, 3);
  EXPECT_EQ(lp[0][1], lp_alone[0][1]);
  std::vector<tasks::Stream*> s{&steps};
  std::vector<std::vector<float>> lp_step;
  for (int32_t t : {1, 2, 3}) tasks::advance(engine, s, {{t}}, &lp_step);
  EXPECT_EQ(steps.state, a.state);
  EXPECT_EQ(steps.next, a.next);
  EXPECT_EQ(lp_step[0][0], lp[0][2]);  // the last token's ln p, from the stream's own next distribution
  EXPECT_EQ(b.fed, 1);
}

TEST(Stream, BytesReadBackAndRefuseOtherModelsAndNaN) {
  const auto m = Model::random(11, 4, 6, 2, 3), other = Model::random(11, 4, 6, 2, 4);
  Engine engine(m, 1);
  tasks::Stream s{State::zeros(*m), {}, 0};
  std::vector<tasks::Stream*> one{&s};
  tasks::advance(engine, one, {{5, 6}});
  const std::string bytes = tasks::stream_bytes(s, m->fingerprint());
  const auto back = tasks::stream_from_bytes(*m, bytes);
  EXPECT_EQ(back.state, s.state);
  EXPECT_EQ(back.next, s.next);
  EXPECT_EQ(back.fed, 2);
  EXPECT_NE(m->fingerprint(), other->fingerprint());  // the same shape, other weights
  EXPECT_THROW(tasks::stream_from_bytes(*other, bytes), InputError);
  std::string nan = bytes;
  const float q = std::nanf("");
  std::memcpy(nan.data() + nan.size() - sizeof q, &q, sizeof q);
  EXPECT_THROW(tasks::stream_from_bytes(*m, nan), InputError);
}

}  // namespace
