// The native fp32 backend's register tiles (src/kernels/fp32/tiles.hpp) at every row count that picks a
// different tile (1 to 13 rows: whole row tiles, every remainder, the lone row), over shapes with full
// panels and tail panels of each width: a row's result is bit-identical alone and in any batch, in any
// order, and within rounding of a double-precision reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/backend.hpp"

namespace k = lstmlm::kernels;

namespace {

constexpr int kMaxRows = 13;

std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Rows r of a [n][stride] buffer as pointers, in the given order.
template <class T>
std::vector<T*> row_ptrs(T* base, size_t stride, const std::vector<int>& order) {
  std::vector<T*> p;
  for (int r : order) p.push_back(base + static_cast<size_t>(r) * stride);
  return p;
}

std::vector<int> iota_rows(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

bool same_bits(const float* a, const float* b, int n) {
  return std::memcmp(a, b, sizeof(float) * size_t(n)) == 0;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct GemmShape {
  int K, N;
};

class KernelTilesGemm : public ::testing::TestWithParam<GemmShape> {};

TEST_P(KernelTilesGemm, RowsBitIdenticalAloneAndNearDouble) {
  const auto [K, N] = GetParam();
  std::mt19937 rng(1234u + static_cast<unsigned>(K * 7919 + N));
  const auto w = random_floats(size_t(N) * size_t(K), rng, 0.5f), bias = random_floats(size_t(N), rng, 0.5f);
  const auto layer = k::backend(lstmlm::Precision::Fp32).linear(w.data(), N, K, bias.data());
  const size_t stride = static_cast<size_t>(layer->stride());
  auto x = random_floats(size_t(kMaxRows) * size_t(K), rng, 1.0f);
  k::Scratch s;

  // Each row alone: the reference for the batches.
  std::vector<float> alone(kMaxRows * stride);
  for (int r = 0; r < kMaxRows; ++r) {
    const float* in = x.data() + size_t(r) * size_t(K);
    float* out = alone.data() + size_t(r) * stride;
    layer->logits(1, &in, &out, s);
    for (int j = 0; j < N; ++j) {
      double ref = bias[size_t(j)], mag = std::fabs(ref);
      for (int i = 0; i < K; ++i) {
        const double t = double(in[i]) * double(w[size_t(j) * size_t(K) + size_t(i)]);
        ref += t;
        mag += std::fabs(t);
      }
      ASSERT_NEAR(out[j], ref, 4e-6 * mag + 1e-30) << "row " << r << " col " << j;
    }
  }
  std::vector<float> batch(kMaxRows * stride);
  for (int rows = 1; rows <= kMaxRows; ++rows) {
    for (bool reversed : {false, true}) {
      auto order = iota_rows(rows);
      if (reversed) std::reverse(order.begin(), order.end());
      std::fill(batch.begin(), batch.end(), NAN);
      auto in = row_ptrs<const float>(x.data(), size_t(K), order);
      auto out = row_ptrs<float>(batch.data(), stride, order);
      layer->logits(rows, in.data(), out.data(), s);
      for (int r = 0; r < rows; ++r)
        ASSERT_TRUE(same_bits(batch.data() + size_t(r) * stride, alone.data() + size_t(r) * stride, N))
            << rows << " rows" << (reversed ? " reversed" : "") << ", row " << r;
    }
  }
}

// Full panels only, tails of 1..4 vectors, a tail alone; K odd and small.
INSTANTIATE_TEST_SUITE_P(KernelTiles, KernelTilesGemm,
                         ::testing::Values(GemmShape{37, 128}, GemmShape{37, 64 * 2 + 16},
                                           GemmShape{5, 64 + 32}, GemmShape{100, 554},
                                           GemmShape{64, 64 * 3 + 64 - 3}, GemmShape{1, 20}));

struct LstmShape {
  int in, hidden, proj;
};

class KernelTilesLstm : public ::testing::TestWithParam<LstmShape> {};

// A layer's canonical weights drawn from rng (W_ih, W_hh, bias, W_hr, in that order) and the LstmWeights
// that point into them (so it stays where it was made).
struct RandomLstm {
  std::vector<float> w_ih, w_hh, bias, w_hr;
  k::LstmWeights lw;
  RandomLstm(const LstmShape& s, std::mt19937& rng) {
    const int O = s.proj > 0 ? s.proj : s.hidden;
    const float scale = 1.0f / std::sqrt(float(s.hidden));
    w_ih = random_floats(size_t(4 * s.hidden) * size_t(s.in), rng, scale);
    w_hh = random_floats(size_t(4 * s.hidden) * size_t(O), rng, scale);
    bias = random_floats(size_t(4 * s.hidden), rng, 0.5f);
    w_hr = random_floats(size_t(std::max(s.proj, 1)) * size_t(s.hidden), rng, scale);
    lw.input = s.in;
    lw.hidden = s.hidden;
    lw.proj = s.proj;
    lw.w_ih = w_ih.data();
    lw.w_hh = w_hh.data();
    lw.bias = bias.data();
    lw.w_hr = s.proj > 0 ? w_hr.data() : nullptr;
  }
  RandomLstm(const RandomLstm&) = delete;
  RandomLstm& operator=(const RandomLstm&) = delete;
};

TEST_P(KernelTilesLstm, StepRowsBitIdenticalAloneAndNearDouble) {
  const auto [E, H, P] = GetParam();
  const int O = P > 0 ? P : H;
  std::mt19937 rng(99u + static_cast<unsigned>(E * 31 + H * 7 + P));
  const RandomLstm weights(GetParam(), rng);
  const auto &w_ih = weights.w_ih, &w_hh = weights.w_hh, &bias = weights.bias, &w_hr = weights.w_hr;
  const auto layer = k::backend(lstmlm::Precision::Fp32).lstm(weights.lw);
  const size_t ts = size_t(layer->term_width()), ms = size_t(layer->memory_stride()),
               hs = size_t(layer->output_stride());
  const auto x = random_floats(size_t(kMaxRows) * size_t(E), rng, 1.0f);
  auto h0 = std::vector<float>(size_t(kMaxRows) * hs, 0.0f),
       c0 = std::vector<float>(size_t(kMaxRows) * ms, 0.0f);
  for (int r = 0; r < kMaxRows; ++r) {
    const auto hr = random_floats(size_t(O), rng, 1.0f), cr = random_floats(size_t(H), rng, 2.0f);
    std::copy(hr.begin(), hr.end(), h0.begin() + std::ptrdiff_t(size_t(r) * hs));
    std::copy(cr.begin(), cr.end(), c0.begin() + std::ptrdiff_t(size_t(r) * ms));
  }
  k::Scratch s;
  std::vector<float> term(size_t(kMaxRows) * ts);
  {
    auto all = iota_rows(kMaxRows);
    auto in = row_ptrs<const float>(x.data(), size_t(E), all);
    auto out = row_ptrs<float>(term.data(), ts, all);
    layer->input_term(kMaxRows, in.data(), out.data(), s);
  }

  // Each row alone, against a double reference of the whole step.
  std::vector<float> c_alone = c0, h_alone(size_t(kMaxRows) * hs);
  for (int r = 0; r < kMaxRows; ++r) {
    const float* hp = h0.data() + size_t(r) * hs;
    const float* tp = term.data() + size_t(r) * ts;
    float* cp = c_alone.data() + size_t(r) * ms;
    float* ho = h_alone.data() + size_t(r) * hs;
    layer->step(1, &hp, &tp, &cp, &ho, s);
    std::vector<double> m(static_cast<size_t>(H));
    for (int u = 0; u < H; ++u) {
      double z[4];
      for (int g = 0; g < 4; ++g) {
        const size_t row = size_t(g * H + u);
        double a = bias[row];
        for (int i = 0; i < E; ++i) a += double(w_ih[row * size_t(E) + size_t(i)]) * x[size_t(r * E + i)];
        for (int i = 0; i < O; ++i) a += double(w_hh[row * size_t(O) + size_t(i)]) * hp[i];
        z[g] = a;
      }
      const double c = sigmoid(z[1]) * c0[size_t(r) * ms + size_t(u)] + sigmoid(z[0]) * std::tanh(z[2]);
      m[size_t(u)] = sigmoid(z[3]) * std::tanh(c);
      ASSERT_NEAR(cp[u], c, 1e-5) << "row " << r << " unit " << u;
    }
    for (int j = 0; j < O; ++j) {
      double ref = m[size_t(j)];
      if (P > 0) {
        ref = 0;
        for (int u = 0; u < H; ++u) ref += double(w_hr[size_t(j) * size_t(H) + size_t(u)]) * m[size_t(u)];
      }
      ASSERT_NEAR(ho[j], ref, 1e-5) << "row " << r << " out " << j;
    }
  }
  std::vector<float> c(size_t(kMaxRows) * ms), h(size_t(kMaxRows) * hs);
  for (int rows = 1; rows <= kMaxRows; ++rows) {
    for (bool reversed : {false, true}) {
      auto order = iota_rows(rows);
      if (reversed) std::reverse(order.begin(), order.end());
      c = c0;
      std::fill(h.begin(), h.end(), NAN);
      auto hp = row_ptrs<const float>(h0.data(), hs, order);
      auto tp = row_ptrs<const float>(term.data(), ts, order);
      auto cp = row_ptrs<float>(c.data(), ms, order);
      auto ho = row_ptrs<float>(h.data(), hs, order);
      layer->step(rows, hp.data(), tp.data(), cp.data(), ho.data(), s);
      for (int r = 0; r < rows; ++r) {
        ASSERT_TRUE(same_bits(c.data() + size_t(r) * ms, c_alone.data() + size_t(r) * ms, H))
            << rows << " rows" << (reversed ? " reversed" : "") << ", c of row " << r;
        ASSERT_TRUE(same_bits(h.data() + size_t(r) * hs, h_alone.data() + size_t(r) * hs, O))
            << rows << " rows" << (reversed ? " reversed" : "") << ", h of row " << r;
      }
    }
  }
}

// A reset state's rows come without h_prev (null, RecurrentLayer::step), and the fp32 layer then skips
// the recurrent product. The results must be those of zero h_prev rows bit for bit, whole or split in
// parts, for every precision and kernel level this CPU has. c is random: a caller's state may pair a zero
// h with any c.
TEST_P(KernelTilesLstm, StepWithoutHPrevIsTheStepOfZeroRows) {
  const auto [E, H, P] = GetParam();
  const int O = P > 0 ? P : H;
  std::mt19937 rng(7u + static_cast<unsigned>(E * 31 + H * 7 + P));
  const RandomLstm weights(GetParam(), rng);
  const auto x = random_floats(size_t(kMaxRows) * size_t(E), rng, 1.0f);
  int levels = 0;
  for (lstmlm::Precision precision : lstmlm::kPrecisions)
    for (k::Isa isa : {k::Isa::Scalar, k::Isa::Avx2, k::Isa::Avx512, k::Isa::Dot, k::Isa::Amx}) {
      const k::Backend* b = k::backend_at(precision, isa);
      if (!b) continue;
      ++levels;
      SCOPED_TRACE(std::string(b->name()));
      const auto layer = b->lstm(weights.lw);
      const size_t ts = size_t(layer->term_width()), ms = size_t(layer->memory_stride()),
                   hs = size_t(layer->output_stride()), mid = size_t(std::max(layer->mid_stride(), 1));
      k::Scratch s, s2;
      std::vector<float> term(size_t(kMaxRows) * ts);
      const auto all = iota_rows(kMaxRows);
      auto xp = row_ptrs<const float>(x.data(), size_t(E), all);
      auto tp = row_ptrs<float>(term.data(), ts, all);
      layer->input_term(kMaxRows, xp.data(), tp.data(), s);
      std::vector<float> c0(size_t(kMaxRows) * ms, 0.0f), zero_h(size_t(kMaxRows) * hs, 0.0f);
      for (int r = 0; r < kMaxRows; ++r)
        for (int u = 0; u < H; ++u) c0[size_t(r) * ms + size_t(u)] = random_floats(1, rng, 2.0f)[0];
      for (int rows : {1, 2, 5, 6, 7, 13}) {
        const auto order = iota_rows(rows);
        auto hp = row_ptrs<const float>(zero_h.data(), hs, order);
        auto tr = row_ptrs<const float>(term.data(), ts, order);
        std::vector<float> c_ref = c0, h_ref(size_t(kMaxRows) * hs, NAN);
        auto cp = row_ptrs<float>(c_ref.data(), ms, order);
        auto ho = row_ptrs<float>(h_ref.data(), hs, order);
        layer->step(rows, hp.data(), tr.data(), cp.data(), ho.data(), s);
        for (int parts : {1, 3}) {
          std::vector<float> c = c0, h(size_t(kMaxRows) * hs, NAN), m(size_t(kMaxRows) * mid, NAN);
          auto cq = row_ptrs<float>(c.data(), ms, order);
          auto hq = row_ptrs<float>(h.data(), hs, order);
          auto mq = row_ptrs<float>(m.data(), mid, order);
          if (parts == 1)
            layer->step(rows, nullptr, tr.data(), cq.data(), hq.data(), s);
          else
            for (int phase = 0; phase < layer->step_phases(); ++phase)
              for (int part = 0; part < parts; ++part)
                layer->step_part(phase, part, parts, rows, nullptr, tr.data(), cq.data(), hq.data(),
                                 mq.data(), s2);
          for (int r = 0; r < rows; ++r) {
            ASSERT_TRUE(same_bits(c.data() + size_t(r) * ms, c_ref.data() + size_t(r) * ms, H))
                << rows << " rows, " << parts << " parts, c of row " << r;
            ASSERT_TRUE(same_bits(h.data() + size_t(r) * hs, h_ref.data() + size_t(r) * hs, O))
                << rows << " rows, " << parts << " parts, h of row " << r;
          }
        }
      }
    }
  EXPECT_GE(levels, 3);  // each precision has its scalar level on every CPU
}

// Whole unit blocks, tails of 1..4 vectors (t = 4, 8, 12, 15 units), a tail alone, a projection.
INSTANTIATE_TEST_SUITE_P(KernelTiles, KernelTilesLstm,
                         ::testing::Values(LstmShape{24, 32, 0}, LstmShape{24, 36, 0}, LstmShape{7, 40, 0},
                                           LstmShape{33, 44, 0}, LstmShape{16, 47, 0}, LstmShape{5, 9, 0},
                                           LstmShape{30, 100, 0}, LstmShape{20, 40, 24}));

}  // namespace
