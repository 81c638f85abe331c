// The generic cells' element-wise updates (kernels/cells/updates_impl.hpp) give the same bits at every
// level this CPU has, on the values where x86's min and max and plain comparisons part: signed zeros and
// NaN (a model's weights may hold NaN; the loader only warns).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cells/updates.hpp"

namespace k = lstmlm::kernels;
namespace cells = lstmlm::kernels::cells;
using lstmlm::Activation;
using lstmlm::RecurrentActivation;

namespace {

constexpr int H = 20;  // a full vector of 16 units and a tail of 4

std::vector<const cells::Updates*> levels() {
  std::vector<const cells::Updates*> out = {&cells::cells_scalar::updates()};
#if defined(__aarch64__)
  if (k::backend_at(lstmlm::Precision::Fp32, k::Isa::Neon)) out.push_back(&cells::cells_neon::updates());
#elif defined(__x86_64__)
  if (k::backend_at(lstmlm::Precision::Fp32, k::Isa::Avx2)) out.push_back(&cells::cells_avx2::updates());
  if (k::backend_at(lstmlm::Precision::Fp32, k::Isa::Avx512)) out.push_back(&cells::cells_avx512::updates());
#endif
  return out;
}

// Unit u's values: zeros of both signs and NaN among ordinary numbers.
float value(int u, int salt) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float v[] = {-0.0f, 0.0f, nan, -0.0f, 1.5f, -2.5f, 0.25f, -0.0f, 7.0f, -7.0f};
  return v[(u * 3 + salt) % 10];
}

// The same bits, but for the payload of a NaN, which no format keeps apart.
bool same(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

struct Out {
  std::vector<float> h, c;
};

// Every update of one level over one row of the values above.
std::vector<Out> run(const cells::Updates& up) {
  std::vector<float> term(4 * H), g(4 * H), h(H), gn(H);
  for (int i = 0; i < 4 * H; ++i) term[size_t(i)] = value(i, 0), g[size_t(i)] = value(i, 1);
  for (int u = 0; u < H; ++u) h[size_t(u)] = value(u, 2), gn[size_t(u)] = value(u, 5);
  const float *t = term.data(), *gp = g.data(), *hp = h.data(), *gnp = gn.data();
  std::vector<Out> outs;
  auto row = [&](auto f) {
    Out o{std::vector<float>(H, 99.0f), {}};
    float* op = o.h.data();
    const cells::Rows a{1, H, 0, H, &t, &gp, &hp, &op};
    f(a, o);
    outs.push_back(std::move(o));
  };
  for (Activation act : {Activation::Relu, Activation::Tanh}) {
    row([&](const cells::Rows& a, Out&) { up.rnn(a, act); });
    for (RecurrentActivation rec : {RecurrentActivation::Sigmoid, RecurrentActivation::HardSigmoid}) {
      row([&](const cells::Rows& a, Out&) { up.gru_after(a, rec, act); });
      row([&](const cells::Rows& a, Out&) { up.gru_reset(a, rec); });
      row([&](const cells::Rows& a, Out&) { up.gru_before(a, &gnp, rec, act); });
      row([&](const cells::Rows& a, Out& o) {
        o.c = h;
        float* cp = o.c.data();
        const lstmlm::kernels::CellParams cell{H, rec, 0.5f, act};
        up.lstm(a, &cp, cell, term.data(), g.data() + H, h.data());
      });
    }
  }
  row([&](const cells::Rows&, Out& o) {
    o.h = h;
    float* op = o.h.data();
    up.clip(1, &op, 0, H, 0.5f);
  });
  return outs;
}

}  // namespace

TEST(KernelsCells, UpdatesGiveTheSameBitsAtEveryLevel) {
  const auto all = levels();
  const auto want = run(*all[0]);
  for (size_t l = 1; l < all.size(); ++l) {
    SCOPED_TRACE(std::string(all[l]->isa) + " against " + all[0]->isa);
    const auto got = run(*all[l]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      for (int u = 0; u < H; ++u) {
        EXPECT_TRUE(same(got[i].h[size_t(u)], want[i].h[size_t(u)]))
            << "update " << i << " unit " << u << ": " << got[i].h[size_t(u)] << " vs "
            << want[i].h[size_t(u)];
        if (!want[i].c.empty()) {
          EXPECT_TRUE(same(got[i].c[size_t(u)], want[i].c[size_t(u)]))
              << "update " << i << " c of unit " << u << ": " << got[i].c[size_t(u)] << " vs "
              << want[i].c[size_t(u)];
        }
      }
  }
}
