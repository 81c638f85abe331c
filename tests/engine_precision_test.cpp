// Every precision through the whole engine at every kernel level this CPU has (LSTMLM_ISA picks the
// level): the batch, position and thread invariance holds within each precision and level; the levels
// that promise the same bits (fp32: every level, kernels/fp32/tiles.hpp; kernels/bf16/bf16.hpp,
// kernels/int8/int8.hpp) give them; and bf16 and int8 stay near fp32.
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine_models.hpp"
#include "kernels/backend.hpp"
#include "lstmlm/error.hpp"

using namespace lstmlm;
using namespace lstmlm::test;

namespace {

class IsaEnv {
 public:
  explicit IsaEnv(const char* v) {
    if (v)
      setenv("LSTMLM_ISA", v, 1);
    else
      unsetenv("LSTMLM_ISA");
  }
  ~IsaEnv() { unsetenv("LSTMLM_ISA"); }
  IsaEnv(const IsaEnv&) = delete;
  IsaEnv& operator=(const IsaEnv&) = delete;
};

struct Level {
  const char* env;      // LSTMLM_ISA
  std::string kernels;  // what Engine::kernels() must then say
};

// The levels of `precision` this CPU has and an Engine runs (bf16 is refused at AVX2: its kernel's bits are
// tested in kernels_lowp_test.cpp), best first; int8's AVX2 level twice where the CPU has AVX-VNNI (avxvnni,
// and avx2: vpmaddubsw).
std::vector<Level> levels(const std::string& p) {
  using kernels::Isa;
#if defined(__aarch64__)
  std::vector<std::pair<Isa, const char*>> all = {
      {Isa::I8mm, "i8mm"}, {Isa::Dot, "dotprod"}, {Isa::Neon, "neon"}};
#else
  std::vector<std::pair<Isa, const char*>> all = {
      {Isa::Amx, "amx"}, {Isa::Dot, p == "int8" ? "avx512vnni" : "avx512bf16"}, {Isa::Avx512, "avx512"}};
  if (p == "int8" && kernels::cpu_features().avx_vnni) all.emplace_back(Isa::Avx2, "avxvnni");
  all.emplace_back(Isa::Avx2, "avx2");
#endif
  all.emplace_back(Isa::Scalar, "scalar");
  std::vector<Level> out;
  for (auto [isa, env] : all) {
    if (!kernels::backend_at(parse_precision(p), isa)) continue;
    const IsaEnv capped(env);
    if (kernels::refusal(parse_precision(p)).empty())
      out.push_back({env, p + "/" + std::string(kernels::isa_name(isa, parse_precision(p)))});
  }
  return out;
}

EngineOptions options(const std::string& precision, int threads) {
  EngineOptions o;
  o.precision = parse_precision(precision);
  o.threads = threads;
  o.column_split_bytes = 0;  // split every operation when rows < threads: the split path is tested too
  o.row_split_bytes = 0;     // and every batch's rows across the threads
  return o;
}

std::vector<MatrixRM> logprobs(Engine& e, const Sequences& in, std::vector<State>& st) {
  std::vector<MatrixRM> lp;
  e.logprobs(in, st, lp);
  return lp;
}

}  // namespace

TEST(EnginePrecision, EveryLevelIsBatchPositionAndThreadInvariant) {
  for (const std::string p : {"fp32", "bf16", "int8"})
    for (const Level& lv : levels(p)) {
      const IsaEnv env(lv.env);
      for (const auto& nm : test_models()) {
        SCOPED_TRACE(lv.kernels + " " + nm.name);
        const Model& m = *nm.model;
        Engine e1(nm.model, options(p, 1)), e2(nm.model, options(p, 2));
        ASSERT_EQ(e1.kernels(), lv.kernels);
        std::mt19937_64 rng(17);
        Sequences probe = {random_tokens(rng, m.vocab_size(), 7)};
        std::vector<State> probe_st = {random_state(m, rng)};
        auto alone_st = probe_st;
        const auto alone = logprobs(e1, probe, alone_st);
        auto st2 = probe_st;
        const auto alone2 = logprobs(e2, probe, st2);  // batch 1 on 2 threads: split by columns
        ASSERT_TRUE(alone2[0] == alone[0]);
        ASSERT_EQ(st2[0], alone_st[0]);
        for (int B : {3, 17, 40}) {
          Sequences in;
          std::vector<State> st;
          const int pos = B / 2;
          for (int r = 0; r < B; ++r) {
            in.push_back(r == pos ? probe[0] : random_tokens(rng, m.vocab_size(), int(rng() % 10)));
            st.push_back(r == pos ? probe_st[0] : random_state(m, rng));
          }
          for (Engine* e : {&e1, &e2}) {
            auto s = st;
            const auto got = logprobs(*e, in, s);
            ASSERT_TRUE(got[size_t(pos)] == alone[0]) << "B " << B << " threads " << e->threads();
            ASSERT_EQ(s[size_t(pos)], alone_st[0]) << "B " << B << " threads " << e->threads();
          }
        }
      }
    }
}

TEST(EnginePrecision, LevelsThatPromiseTheSameBitsGiveThem) {
  for (const std::string p : {"fp32", "bf16", "int8"}) {
    for (const auto& nm : test_models()) {
      SCOPED_TRACE(p + " " + nm.name);
      std::mt19937_64 rng(23);
      Sequences in;
      for (int r = 0; r < 5; ++r) in.push_back(random_tokens(rng, nm.model->vocab_size(), 6));
      std::vector<MatrixRM> first;
      std::string first_name;
      for (const Level& lv : levels(p)) {
        if (p == "bf16" && std::string(lv.env) == "amx") continue;  // AMX sums in its own order (bf16.hpp)
        const IsaEnv env(lv.env);
        Engine e(nm.model, options(p, 1));
        ASSERT_EQ(e.kernels(), lv.kernels);
        std::vector<State> st(in.size(), State::zeros(*nm.model));
        auto lp = logprobs(e, in, st);
        if (first.empty()) {
          first = std::move(lp);
          first_name = lv.kernels;
          continue;
        }
        for (size_t r = 0; r < in.size(); ++r)
          ASSERT_TRUE(lp[r] == first[r]) << lv.kernels << " vs " << first_name;
      }
    }
  }
}

TEST(EnginePrecision, StaysNearFp32) {
  // A loose bound that only a wrong layout, scale or gate order breaks: those move log-probabilities by
  // whole nats. The fidelity against fp32 proper is measured on real models (lstmlm fidelity, docs).
  const std::pair<std::string, double> bounds[] = {{"bf16", 0.25}, {"int8", 0.5}};
  for (const auto& [p, bound] : bounds)
    for (const Level& lv : levels(p)) {
      const IsaEnv env(lv.env);
      for (const auto& nm : test_models()) {
        SCOPED_TRACE(lv.kernels + " " + nm.name);
        std::mt19937_64 rng(31);
        Sequences in = {random_tokens(rng, nm.model->vocab_size(), 12)};
        Engine lo(nm.model, options(p, 1)), fp(nm.model, options("fp32", 1));
        std::vector<State> s1 = {State::zeros(*nm.model)}, s2 = s1;
        const auto a = logprobs(lo, in, s1), b = logprobs(fp, in, s2);
        EXPECT_LE((a[0] - b[0]).cwiseAbs().maxCoeff(), bound);
        EXPECT_GT((a[0] - b[0]).cwiseAbs().maxCoeff(), 0.0) << "the low precision did not run";
      }
    }
}

TEST(EnginePrecision, IsaVariableCapsTheLevelAndIsChecked) {
  auto model = test_models()[1].model;
#if defined(__aarch64__)
  const kernels::CpuFeatures& f = kernels::cpu_features();
  {
    const IsaEnv env("neon");
    // bf16 on NEON FMAs, as on AVX2: refused, saying what to use.
    try {
      Engine e(model, options("bf16", 1));
      ADD_FAILURE() << "bf16 ran on " << e.kernels();
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("use fp32"), std::string::npos) << e.what();
    }
    EXPECT_EQ(Engine(model, options("int8", 1)).kernels(), f.neon ? "int8/neon" : "int8/scalar");
    EXPECT_EQ(Engine(model, options("fp32", 1)).kernels(), f.neon ? "fp32/neon" : "fp32/scalar");
  }
  {
    const IsaEnv env("dotprod");
    EXPECT_EQ(Engine(model, options("int8", 1)).kernels(), f.dotprod ? "int8/dotprod" : "int8/neon");
    EXPECT_EQ(Engine(model, options("fp32", 1)).kernels(), "fp32/neon");
  }
  {
    const IsaEnv env(nullptr);
    EXPECT_EQ(Engine(model, options("int8", 1)).kernels(), f.i8mm      ? "int8/i8mm"
                                                           : f.dotprod ? "int8/dotprod"
                                                                       : "int8/neon");
    EXPECT_EQ(Engine(model, options("fp32", 1)).kernels(), "fp32/neon");
  }
  {
    // x86's names are not levels here.
    const IsaEnv env("avx2");
    try {
      Engine e(model, options("fp32", 1));
      FAIL() << "LSTMLM_ISA=avx2 was accepted on aarch64";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("use i8mm, dotprod, neon or scalar"), std::string::npos)
          << e.what();
    }
  }
#else
  {
    const IsaEnv env("avx2");
    // bf16 on AVX2 FMAs runs at about half fp32's speed: refused, saying what to use.
    try {
      Engine e(model, options("bf16", 1));
      ADD_FAILURE() << "bf16 ran on " << e.kernels();
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("use fp32"), std::string::npos) << e.what();
    }
    EXPECT_EQ(kernels_for(Precision::Bf16), "bf16/refused");
    // int8 capped at AVX2 runs what a CPU without AVX-VNNI runs, and says so.
    EXPECT_EQ(Engine(model, options("int8", 1)).kernels(), "int8/avx2");
    EXPECT_EQ(kernels_for(Precision::Int8), "int8/avx2");
    EXPECT_EQ(Engine(model, options("fp32", 1)).kernels(), "fp32/avx2");
  }
  {
    const IsaEnv env("avxvnni");
    // The same level with AVX-VNNI where the CPU has it; bf16 still refused.
    EXPECT_EQ(Engine(model, options("int8", 1)).kernels(),
              kernels::cpu_features().avx_vnni ? "int8/avxvnni" : "int8/avx2");
    EXPECT_EQ(kernels_for(Precision::Bf16), "bf16/refused");
  }
  {
    // Back and forth in one process: the two int8 AVX2 backends are cached apart, each with its own kernels
    // (one cache slot would hand the second engine the first one's).
    const IsaEnv env("avx2");
    Engine plain(model, options("int8", 1));
    setenv("LSTMLM_ISA", "avxvnni", 1);
    Engine vnni(model, options("int8", 1));
    setenv("LSTMLM_ISA", "avx2", 1);
    EXPECT_EQ(Engine(model, options("int8", 1)).kernels(), "int8/avx2");
    EXPECT_EQ(plain.kernels(), "int8/avx2");
    EXPECT_EQ(vnni.kernels(), kernels::cpu_features().avx_vnni ? "int8/avxvnni" : "int8/avx2");
  }
  {
    // fp32 has no dot-product or tile kernels: capped there (or unset) it runs AVX-512 where the CPU has it.
    const IsaEnv env("avx512vnni");
    EXPECT_EQ(Engine(model, options("fp32", 1)).kernels(),
              kernels::cpu_features().avx512 ? "fp32/avx512" : "fp32/avx2");
  }
#endif
  {
    const IsaEnv env("scalar");
    EXPECT_EQ(Engine(model, options("int8", 1)).kernels(), "int8/scalar");
    EXPECT_EQ(Engine(model, options("fp32", 1)).kernels(), "fp32/scalar");
  }
  {
    const IsaEnv env("avx9000");
    try {
      Engine e(model, options("bf16", 1));
      FAIL() << "an unknown LSTMLM_ISA was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("LSTMLM_ISA='avx9000'"), std::string::npos) << e.what();
    }
  }
  try {
    Engine e(model, options("fp16", 1));
    FAIL() << "an unknown precision was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("fp16"), std::string::npos) << e.what();
  }
}
