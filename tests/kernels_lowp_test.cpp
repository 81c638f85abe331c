// The bf16 and int8 GEMMs (src/kernels/lowp) at every kernel level this CPU has: against float64 sums
// of the rounded operands, the levels that promise the same bits against each other, and a row alone,
// in a batch and split by columns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "kernels/lowp/gemm.hpp"

using namespace lstmlm::kernels;
using lowp::Cols;

namespace {

constexpr Isa kLevels[] = {Isa::Amx, Isa::Dot, Isa::Avx512, Isa::Avx2, Isa::Scalar};

bool cpu_has(const char* precision, Isa isa) {
  return backend_at(lstmlm::parse_precision(precision), isa) != nullptr;
}

// bf16 by its definition: 8 significant bits, round half to even (frexp gives m in [0.5, 1): m 2^9 has
// the 8 bits before the point). The test data stay far from the denormal and overflow ranges.
double bf16(double v) {
  int e;
  const double m = std::frexp(v, &e);
  return std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8);
}

struct Problem {
  int N, K, rows;
  std::vector<float> w, x, init;  // [N, K], [rows, K], [rows, Np]
  int Np() const { return round_up(N, 16); }
  lowp::RowFn row() const {
    return [this](int n) { return w.data() + static_cast<size_t>(n) * static_cast<size_t>(K); };
  }
};

// Weights N(0, 0.3^2); with `spikes`, U(-0.5, 0.5) instead (max / rms <= sqrt 3) and a weight of 2 in each
// of those rows (max / rms >= 2 / sqrt(0.25 / 3 + 4 / K) > 3 for K >= 40: int8's heavy rows, gemm.cpp).
Problem make_problem(int N, int K, int rows, uint64_t seed, const std::vector<int>& spikes = {}) {
  Problem p{N, K, rows, {}, {}, {}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  p.w.resize(size_t(N) * size_t(K));
  p.x.resize(size_t(rows) * size_t(K));
  p.init.resize(size_t(rows) * size_t(p.Np()));
  for (auto& v : p.w) v = spikes.empty() ? 0.3f * d(rng) : u(rng);
  for (int n : spikes) p.w[size_t(n) * size_t(K) + size_t(n % K)] = 2.0f;
  for (auto& v : p.x) v = d(rng);
  for (auto& v : p.init) v = d(rng);
  return p;
}

// out rows [rows][Np] of `g` over columns `cols`, rows given in `order` (indices into the problem).
std::vector<float> run(const lowp::Gemm& g, const Problem& p, const std::vector<int>& order,
                       const std::vector<Cols>& cols) {
  std::vector<float> out(size_t(p.rows) * size_t(p.Np()), NAN);
  std::vector<const float*> x, init;
  std::vector<float*> o;
  for (int r : order) {
    x.push_back(p.x.data() + size_t(r) * size_t(p.K));
    init.push_back(p.init.data() + size_t(r) * size_t(p.Np()));
    o.push_back(out.data() + size_t(r) * size_t(p.Np()));
  }
  Scratch s;
  g.multiply(static_cast<int>(order.size()), x.data(), init.data(), o.data(), cols.data(),
             static_cast<int>(cols.size()), s);
  return out;
}

std::vector<int> all_rows(int n) {
  std::vector<int> v;
  for (int r = 0; r < n; ++r) v.push_back(r);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b, int N, int Np) {
  for (size_t i = 0; i < a.size(); ++i)
    if (int(i % size_t(Np)) < N && std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  return true;
}

using Factory = std::unique_ptr<lowp::Gemm> (*)(Isa, const lowp::RowFn&, int, int);

// Rows alone, reversed, in one batch and as three column ranges: the same bits (backend.hpp's contract).
// For int8, blocks 1 and 3 hold heavy rows (a residual pass) and the ranges cut the first in two.
void check_invariance(Factory make, const char* precision) {
  const Problem p = make_problem(53, 70, 19, 7, {20, 50});
  for (Isa isa : kLevels) {
    if (!cpu_has(precision, isa)) continue;
    SCOPED_TRACE(std::string(precision) + " level " + std::to_string(int(isa)));
    auto g = make(isa, p.row(), p.N, p.K);
    const std::vector<Cols> whole = {{0, p.Np()}};
    const auto batch = run(*g, p, all_rows(p.rows), whole);
    std::vector<int> rev = all_rows(p.rows);
    std::reverse(rev.begin(), rev.end());
    EXPECT_TRUE(same_bits(run(*g, p, rev, whole), batch, p.N, p.Np()));
    EXPECT_TRUE(same_bits(run(*g, p, all_rows(p.rows), {{0, 16}, {16, 32}, {32, 48}, {48, p.Np()}}), batch,
                          p.N, p.Np()));
    EXPECT_TRUE(same_bits(run(*g, p, all_rows(p.rows), {{48, p.Np()}, {0, 48}}), batch, p.N, p.Np()));
    for (int r = 0; r < p.rows; ++r) {
      const auto alone = run(*g, p, {r}, whole);
      for (int c = 0; c < p.N; ++c) {
        const size_t i = size_t(r) * size_t(p.Np()) + size_t(c);
        ASSERT_EQ(std::memcmp(&alone[i], &batch[i], sizeof(float)), 0) << "row " << r << " col " << c;
      }
    }
  }
}

}  // namespace

TEST(KernelsLowp, Bf16MatchesFloat64SumOfRoundedOperandsAtEveryLevel) {
  for (int K : {1, 31, 70, 257}) {
    const Problem p = make_problem(53, K, 21, 100 + K);
    for (Isa isa : kLevels) {
      if (!cpu_has("bf16", isa)) continue;
      SCOPED_TRACE("K " + std::to_string(K) + " level " + std::to_string(int(isa)));
      auto g = lowp::make_bf16_gemm(isa, p.row(), p.N, p.K);
      const auto out = run(*g, p, all_rows(p.rows), {{0, p.Np()}});
      for (int r = 0; r < p.rows; ++r)
        for (int n = 0; n < p.N; ++n) {
          double ref = p.init[size_t(r) * size_t(p.Np()) + size_t(n)], mag = std::fabs(ref);
          for (int k = 0; k < K; ++k) {
            const double t =
                bf16(p.w[size_t(n) * size_t(K) + size_t(k)]) * bf16(p.x[size_t(r) * size_t(K) + size_t(k)]);
            ref += t;
            mag += std::fabs(t);
          }
          // Each product is exact in fp32; K + 1 fp32 sums, each within half an ulp (2^-24 relative).
          const double bound = (K + 1) * std::ldexp(1.0, -24) * mag + 1e-30;
          ASSERT_NEAR(out[size_t(r) * size_t(p.Np()) + size_t(n)], ref, bound) << "r " << r << " n " << n;
        }
    }
  }
}

TEST(KernelsLowp, Bf16LevelsBelowAmxGiveTheSameBits) {
  const Problem p = make_problem(77, 130, 9, 3);
  std::vector<float> first;
  for (Isa isa : {Isa::Dot, Isa::Avx512, Isa::Avx2, Isa::Scalar}) {
    if (!cpu_has("bf16", isa)) continue;
    const auto out = run(*lowp::make_bf16_gemm(isa, p.row(), p.N, p.K), p, all_rows(p.rows), {{0, p.Np()}});
    if (first.empty())
      first = out;
    else
      EXPECT_TRUE(same_bits(out, first, p.N, p.Np())) << "level " << int(isa);
  }
}

TEST(KernelsLowp, Int8MatchesItsDefinitionAndEveryLevelGivesTheSameBits) {
  struct Case {
    int K;
    std::vector<int> spikes;  // empty: Gaussian rows, heavy or not by chance
  };
  const Case cases[] = {{1, {}}, {63, {}}, {70, {}}, {200, {}}, {70, {20}}, {128, {3, 40}}};
  for (const Case& c : cases) {
    const int K = c.K;
    const Problem p = make_problem(41, K, 18, 200 + K, c.spikes);
    // The definition (int8.hpp, gemm.cpp): per row s = max|v| / 127, q = round half even (v / s) in
    // [-127, 127]; out = init + (sum_k qx qw) sx sw, here in float64. A row is heavy when max|w| > 3 rms;
    // every row of a block (16 rows) holding one also has the residual r = fl(w - qw sw) quantized alike,
    // and out adds (sum_k qx qr) sx sr.
    auto quant = [](const float* v, int n, std::vector<int>& q) {
      double amax = 0;
      for (int k = 0; k < n; ++k) amax = std::max(amax, double(std::fabs(v[k])));
      q.assign(size_t(n), 0);
      if (amax == 0) return 0.0;
      for (int k = 0; k < n; ++k) q[size_t(k)] = int(std::nearbyint(double(v[k] * (127.0f / float(amax)))));
      return amax / 127.0;
    };
    auto heavy = [&](int n) {
      double ss = 0, mx = 0;
      for (int k = 0; k < K; ++k) {
        const double v = p.w[size_t(n) * size_t(K) + size_t(k)];
        ss += v * v;
        mx = std::max(mx, std::fabs(v));
      }
      return mx > 3 * std::sqrt(ss / K);
    };
    std::vector<bool> heavy_block(size_t(p.Np() / 16), false);
    for (int n = 0; n < p.N; ++n)
      if (heavy(n)) heavy_block[size_t(n / 16)] = true;
    if (!c.spikes.empty()) {
      // Only the blocks of the spikes: the test covers light and heavy blocks side by side.
      for (size_t b = 0; b < heavy_block.size(); ++b) {
        bool spiked = false;
        for (int n : c.spikes) spiked |= size_t(n / 16) == b;
        ASSERT_EQ(heavy_block[b], spiked) << "block " << b;
      }
    }
    std::vector<float> first;
    for (Isa isa : kLevels) {
      if (!cpu_has("int8", isa)) continue;
      SCOPED_TRACE("K " + std::to_string(K) + " level " + std::to_string(int(isa)));
      const auto out = run(*lowp::make_int8_gemm(isa, p.row(), p.N, p.K), p, all_rows(p.rows), {{0, p.Np()}});
      if (first.empty()) {
        first = out;
        std::vector<int> qx, qw, qr;
        std::vector<float> res(static_cast<size_t>(K));
        for (int r = 0; r < p.rows; ++r) {
          const double sx = quant(p.x.data() + size_t(r) * size_t(K), K, qx);
          for (int n = 0; n < p.N; ++n) {
            const float* w = p.w.data() + size_t(n) * size_t(K);
            const double sw = quant(w, K, qw);
            long long acc = 0, acc2 = 0;
            for (int k = 0; k < K; ++k) acc += qx[size_t(k)] * qw[size_t(k)];
            double sr = 0;
            if (heavy_block[size_t(n / 16)]) {
              for (int k = 0; k < K; ++k) res[size_t(k)] = std::fma(-float(qw[size_t(k)]), float(sw), w[k]);
              sr = quant(res.data(), K, qr);
              for (int k = 0; k < K; ++k) acc2 += qx[size_t(k)] * qr[size_t(k)];
            }
            const double init = p.init[size_t(r) * size_t(p.Np()) + size_t(n)];
            const double t1 = double(acc) * sx * sw, t2 = double(acc2) * sx * sr;
            const double ref = init + t1 + t2;
            // The kernel rounds sx sw and each fma once: 2 ulps of the larger term, per pass.
            const double bound =
                4 * std::ldexp(1.0, -24) * (std::fabs(t1) + 2 * std::fabs(init) + std::fabs(t2));
            ASSERT_NEAR(out[size_t(r) * size_t(p.Np()) + size_t(n)], ref, bound) << "r " << r << " n " << n;
          }
        }
      } else {
        EXPECT_TRUE(same_bits(out, first, p.N, p.Np()));
      }
    }
    // The AVX2 level's vpmaddubsw kernel, which this CPU may have passed over for AVX-VNNI.
    if (cpu_has("int8", Isa::Avx2)) {
      EXPECT_TRUE(same_bits(run(*lowp::make_int8_gemm_without_avx_vnni(Isa::Avx2, p.row(), p.N, p.K), p,
                                all_rows(p.rows), {{0, p.Np()}}),
                            first, p.N, p.Np()))
          << "K " << K << " vpmaddubsw";
    }
  }
}

// The residual rows bring a heavy block's weights from 8 to about 15 bits. The inputs are m / 127 with
// integer m and max |m| = 127, which int8 holds exactly, so the weights' rounding is all the error.
TEST(KernelsLowp, Int8HeavyRowsGetTheirResidual) {
  const int K = 128;
  Problem p = make_problem(32, K, 8, 3, {5});  // block 0 heavy, block 1 light
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> m(-127, 127);
  for (int r = 0; r < p.rows; ++r)
    for (int k = 0; k < K; ++k) p.x[size_t(r * K + k)] = float(k == r ? 127 : m(rng)) / 127.0f;
  for (Isa isa : kLevels) {
    if (!cpu_has("int8", isa)) continue;
    const auto out = run(*lowp::make_int8_gemm(isa, p.row(), p.N, p.K), p, all_rows(p.rows), {{0, 32}});
    double err[2] = {0, 0}, size[2] = {0, 0};
    for (int r = 0; r < p.rows; ++r)
      for (int n = 0; n < p.N; ++n) {
        double exact = 0;
        for (int k = 0; k < K; ++k) exact += double(p.w[size_t(n * K + k)]) * double(p.x[size_t(r * K + k)]);
        const double got = out[size_t(r * p.Np() + n)] - double(p.init[size_t(r * p.Np() + n)]);
        err[n / 16] += (got - exact) * (got - exact);
        size[n / 16] += exact * exact;
      }
    // One plane, U(-0.5, 0.5) rows: step 0.5 / 127, relative error ~ step / sqrt(12) / rms(w) = 2.3e-3.
    // With the residual: about 254 times less, then the fp32 roundings of the two terms.
    const double light = std::sqrt(err[1] / size[1]), heavy = std::sqrt(err[0] / size[0]);
    EXPECT_GT(light, 1e-3) << "level " << int(isa);
    EXPECT_LT(light, 5e-3) << "level " << int(isa);
    EXPECT_LT(heavy, light / 50) << "level " << int(isa);
  }
}

TEST(KernelsLowp, Bf16RowsAreBitIdenticalAloneInABatchAndSplit) {
  check_invariance(&lowp::make_bf16_gemm, "bf16");
}
TEST(KernelsLowp, Int8RowsAreBitIdenticalAloneInABatchAndSplit) {
  check_invariance(&lowp::make_int8_gemm, "int8");
}

// Weights larger than one chunk of lowp/tiling.hpp (384 KiB): K 2000 makes a block of 16 columns 32 KiB in
// int8 and 64 KiB in bf16, so 22 blocks are three chunks (two of 8, one of 6), with full and edge register
// tiles in each; 13 rows are every row tile of every level (int8 VNNI: 8, then 4, then a lone row). Every
// level below AMX against the scalar one, which has no chunks, and a row alone against the batch.
TEST(KernelsLowp, WeightsOfSeveralChunksGiveTheSameBitsAsTheScalarLevel) {
  const Problem p = make_problem(340, 2000, 13, 11, {7, 200});
  for (auto [make, precision] : {std::pair<Factory, const char*>{&lowp::make_int8_gemm, "int8"},
                                 std::pair<Factory, const char*>{&lowp::make_bf16_gemm, "bf16"}}) {
    const std::vector<Cols> whole = {{0, p.Np()}};
    const auto reference = run(*make(Isa::Scalar, p.row(), p.N, p.K), p, all_rows(p.rows), whole);
#if defined(__aarch64__)
    for (Isa isa : {Isa::I8mm, Isa::Dot, Isa::Neon}) {  // int8 on I8MM has its tiles too
#else
    for (Isa isa : {Isa::Dot, Isa::Avx512, Isa::Avx2}) {
#endif
      if (!cpu_has(precision, isa)) continue;
      SCOPED_TRACE(std::string(precision) + " level " + std::to_string(int(isa)));
      auto g = make(isa, p.row(), p.N, p.K);
      EXPECT_TRUE(same_bits(run(*g, p, all_rows(p.rows), whole), reference, p.N, p.Np()));
      EXPECT_TRUE(same_bits(run(*g, p, all_rows(p.rows), {{16, 176}, {0, 16}, {176, p.Np()}}), reference, p.N,
                            p.Np()));
      const auto alone = run(*g, p, {12}, whole);
      EXPECT_EQ(std::memcmp(alone.data() + 12 * size_t(p.Np()), reference.data() + 12 * size_t(p.Np()),
                            size_t(p.N) * sizeof(float)),
                0);
    }
  }
  if (cpu_has("int8", Isa::Avx2)) {
    auto g = lowp::make_int8_gemm_without_avx_vnni(Isa::Avx2, p.row(), p.N, p.K);
    const std::vector<Cols> whole = {{0, p.Np()}};
    EXPECT_TRUE(same_bits(
        run(*g, p, all_rows(p.rows), whole),
        run(*lowp::make_int8_gemm(Isa::Scalar, p.row(), p.N, p.K), p, all_rows(p.rows), whole), p.N, p.Np()))
        << "vpmaddubsw";
  }
}

TEST(KernelsLowp, Int8KeepsZeroAndNonFiniteRowsHonest) {
  Problem p = make_problem(16, 10, 3, 5);
  std::fill(p.x.begin(), p.x.begin() + 10, 0.0f);  // row 0: all zero -> out = init
  p.x[15] = INFINITY;                              // row 1: non-finite -> NaN
  for (Isa isa : kLevels) {
    if (!cpu_has("int8", isa)) continue;
    const auto out = run(*lowp::make_int8_gemm(isa, p.row(), p.N, p.K), p, all_rows(p.rows), {{0, 16}});
    for (int n = 0; n < 16; ++n) {
      EXPECT_EQ(out[size_t(n)], p.init[size_t(n)]);
      EXPECT_TRUE(std::isnan(out[16 + size_t(n)]));
      EXPECT_TRUE(std::isfinite(out[32 + size_t(n)]));
    }
  }
}

// The engine passes one Scratch to every matrix of a thread: whatever an earlier call left in it (another
// depth, more rows, infinities) must not reach a later one. K 69 leaves an input past K in every level's
// depth padding (bf16 pads to pairs below AMX), where a stale infinity times the zero weight is NaN.
TEST(KernelsLowp, AScratchReusedAcrossMatricesAndRowCountsChangesNothing) {
  Problem big = make_problem(48, 200, 37, 41);
  const Problem small = make_problem(48, 69, 19, 43);
  std::fill(big.x.begin(), big.x.end(), INFINITY);
  for (const char* precision : {"bf16", "int8"})
    for (Isa isa : kLevels) {
      if (!cpu_has(precision, isa)) continue;
      SCOPED_TRACE(std::string(precision) + " level " + std::to_string(int(isa)));
      const Factory make = std::string(precision) == "bf16" ? &lowp::make_bf16_gemm : &lowp::make_int8_gemm;
      auto gb = make(isa, big.row(), big.N, big.K), gs = make(isa, small.row(), small.N, small.K);
      const std::vector<Cols> whole = {{0, small.Np()}};
      const auto fresh = run(*gs, small, all_rows(small.rows), whole);
      // Fill the scratch with non-zero values through the deeper, taller matrix, then reuse it.
      Scratch s;
      std::vector<float> ob(size_t(big.rows) * size_t(big.Np()));
      std::vector<const float*> xb, ib;
      std::vector<float*> pb;
      for (int r = 0; r < big.rows; ++r) {
        xb.push_back(big.x.data() + size_t(r) * size_t(big.K));
        ib.push_back(big.init.data() + size_t(r) * size_t(big.Np()));
        pb.push_back(ob.data() + size_t(r) * size_t(big.Np()));
      }
      const Cols cb{0, big.Np()};
      gb->multiply(big.rows, xb.data(), ib.data(), pb.data(), &cb, 1, s);
      std::vector<float> os(size_t(small.rows) * size_t(small.Np()));
      std::vector<const float*> xs, is;
      std::vector<float*> ps;
      for (int r = 0; r < small.rows; ++r) {
        xs.push_back(small.x.data() + size_t(r) * size_t(small.K));
        is.push_back(small.init.data() + size_t(r) * size_t(small.Np()));
        ps.push_back(os.data() + size_t(r) * size_t(small.Np()));
      }
      gs->multiply(small.rows, xs.data(), is.data(), ps.data(), whole.data(), 1, s);
      EXPECT_TRUE(same_bits(os, fresh, small.N, small.Np()));
      gs->multiply(1, xs.data(), is.data(), ps.data(), whole.data(), 1, s);  // one row, after 19
      for (int c = 0; c < small.N; ++c) ASSERT_EQ(os[size_t(c)], fresh[size_t(c)]) << "col " << c;
    }
}
