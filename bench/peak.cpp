// Machine peaks: register-only loops of independent fp32 fused multiply-adds and, where the CPU has them,
// of the int8 and bf16 dot-product instructions, run on 1..N threads. Every figure of bench/compare is
// also read as a fraction of the fp32 number; the dot-product peaks bound the int8 and bf16 kernels.
//
// Why 16 chains: an FMA has a latency of 4 cycles and up to 2 issue per cycle, so at least 8
// independent accumulators are needed to keep both pipes busy; 16 leaves margin and still fits in
// the 32 zmm registers with the two multiplicands. AVX2 has 16 ymm registers, so 14 chains there (16
// spilled two accumulators to the stack every round, which measured a third below the peak). The
// dot-product instructions issue like FMAs, so the same counts.
// Built by bench/compare (not part of the library):
//   g++ -O2 -mavx512f -pthread bench/peak.cpp -o peak        (AVX2 variant: -mavx2 -mfma -DPEAK_AVX2)
// No -mavx512vnni/-mavx512bf16 is needed: the dot products are inline asm, run only when the CPU has them.
// Usage: peak [seconds per measurement, default 0.5] [max threads, default all cores]
// Prints one JSON object per thread count, e.g.
//   {"threads":N,"gflops":X,"int8_gops":Y,"bf16_gflops":Z,"l2_read_gbs":W,"l3_read_gbs":M,"isa":"avx512f"}
// int8_gops: AVX512-VNNI vpdpbusd zmm (128 ops each), or with PEAK_AVX2 AVX-VNNI's vpdpbusd ymm (64 ops);
// int8_maddubs_gops (PEAK_AVX2 only): the exact AVX2 sequence without VNNI (spin_int8_maddubs);
// bf16_gflops: AVX512-BF16 vdpbf16ps zmm (64 flops each; none with PEAK_AVX2). A key is left out when
// the CPU lacks the instruction. l2_read_gbs, l3_read_gbs: GB/s read from a 512 KiB and a 64 MiB buffer per
// thread (spin_read).
// On aarch64 (g++ -O2 -pthread bench/peak.cpp -o peak): the fp32 peak on NEON's 128-bit FMA (fmla, 16 chains
// of the 32 registers) and the read rates; no dot-product peak there yet (int8_gops, bf16_gflops left out).
#if defined(__aarch64__)
#include <arm_neon.h>
#else
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

#if defined(__aarch64__)
using Vec = float32x4_t;
constexpr int kLanes = 4;
constexpr int kChains = 16;
constexpr const char* kIsa = "neon";
inline Vec set1(float x) { return vdupq_n_f32(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return vfmaq_f32(c, a, b); }
inline Vec add(Vec a, Vec b) { return vaddq_f32(a, b); }
inline Vec load(const float* p) { return vld1q_f32(p); }
inline float sum(Vec v) { return vaddvq_f32(v); }
#elif defined(PEAK_AVX2)
using Vec = __m256;
constexpr int kLanes = 8;
constexpr int kChains = 14;
constexpr const char* kIsa = "avx2+fma";
inline Vec set1(float x) { return _mm256_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline Vec load(const float* p) { return _mm256_load_ps(p); }
inline float sum(Vec v) {
  alignas(32) float f[8];
  _mm256_store_ps(f, v);
  float s = 0;
  for (float x : f) s += x;
  return s;
}
#else
using Vec = __m512;
constexpr int kLanes = 16;
constexpr int kChains = 16;
constexpr const char* kIsa = "avx512f";
inline Vec set1(float x) { return _mm512_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline Vec load(const float* p) { return _mm512_load_ps(p); }
inline float sum(Vec v) {
  alignas(64) float f[16];
  _mm512_store_ps(f, v);
  float s = 0;
  for (float x : f) s += x;
  return s;
}
#endif

constexpr int64_t kInner = 1 << 16;  // instructions per chain between clock reads

std::atomic<float> sink{0};

// Calls round() until `seconds` have passed; returns the operations done (ops_per_round each) and the time.
template <class Round>
std::pair<double, double> timed(double seconds, double ops_per_round, Round round) {
  auto t0 = std::chrono::steady_clock::now();
  int64_t rounds = 0;
  double dt = 0;
  do {
    round();
    ++rounds;
    dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (dt < seconds);
  return {ops_per_round * static_cast<double>(rounds), dt};
}

// Runs the FMA loop for at least `seconds`; returns FLOPs done and the time taken.
std::pair<double, double> spin_fp32(double seconds) {
  // a*x + b with a slightly below 1 keeps the values bounded (no overflow, no denormals).
  Vec a = set1(0.999999f), b = set1(1e-7f);
  Vec acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = set1(static_cast<float>(i));
  auto t0 = std::chrono::steady_clock::now();
  int64_t rounds = 0;
  double dt = 0;
  do {
    for (int64_t k = 0; k < kInner; ++k) {
#pragma GCC unroll 16
      for (int i = 0; i < kChains; ++i) acc[i] = fma(acc[i], a, b);
    }
    ++rounds;
    dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (dt < seconds);
  Vec total = acc[0];
  for (int i = 1; i < kChains; ++i) total = add(total, acc[i]);
  sink.store(sink.load() + sum(total));
  return {2.0 * kLanes * kChains * static_cast<double>(kInner) * static_cast<double>(rounds), dt};
}

// Reads a buffer of kKiB per thread with aligned vector loads into 8 independent sums, over and over; returns
// the bytes read and the time. 512 KiB sits in L2 on the CPUs measured (1-2 MiB per core; far past L1): the
// rate bounds a kernel whose weights are there and read once per token (SEED generate at batch 1, 382 KB of
// fp32 weights per token). 64 MiB is past L2, in L3 where it is that large, else memory: the bound of a
// batch-1 step of MEDIUM (46 MB of fp32 weights per token).
template <size_t kKiB>
std::pair<double, double> spin_read(double seconds) {
  constexpr size_t kBytes = kKiB << 10, kFloats = kBytes / sizeof(float);
  float* buf = static_cast<float*>(std::aligned_alloc(64, kBytes));
  std::fill(buf, buf + kFloats, 1e-7f);
  Vec s[8];
  for (Vec& v : s) v = set1(0.0f);
  auto r = timed(seconds, static_cast<double>(kBytes), [&] {
    for (size_t i = 0; i < kFloats; i += 8 * kLanes)
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) s[j] = add(s[j], load(buf + i + static_cast<size_t>(j) * kLanes));
  });
  for (int j = 1; j < 8; ++j) s[0] = add(s[0], s[j]);
  sink.store(sink.load() + sum(s[0]));
  std::free(buf);
  return r;
}

#if !defined(__aarch64__)
// The dot-product loops are asm on fixed registers: GCC 12 copies or spills the accumulators of
// _mm512_dpbusd_epi32 in a loop, which measured well below the 2 per cycle the instruction issues at.
// Operands are set once per round (the clock read between rounds clobbers every vector register);
// nothing in the C++ loop between the asm blocks uses a vector register.
// clang-format off
#define PEAK_DP(ins, acc) ins " " PEAK_SRC "%%" acc "\n\t"
#ifdef PEAK_AVX2
#define PEAK_SRC "%%ymm15, %%ymm14, "
#define PEAK_DP14(ins) \
  PEAK_DP(ins, "ymm0") PEAK_DP(ins, "ymm1") PEAK_DP(ins, "ymm2") PEAK_DP(ins, "ymm3") \
  PEAK_DP(ins, "ymm4") PEAK_DP(ins, "ymm5") PEAK_DP(ins, "ymm6") PEAK_DP(ins, "ymm7") \
  PEAK_DP(ins, "ymm8") PEAK_DP(ins, "ymm9") PEAK_DP(ins, "ymm10") PEAK_DP(ins, "ymm11") \
  PEAK_DP(ins, "ymm12") PEAK_DP(ins, "ymm13")
#define PEAK_CLOBBERS \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", \
  "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"
// clang-format on

// Sets the operands ymm14 and ymm15 to x and zeroes the 14 accumulators.
inline void dot_setup(const __m256i& x) {
  __asm__ volatile(
      "vmovdqa %[x], %%ymm14\n\tvmovdqa %[x], %%ymm15\n\t"
      "vpxor %%ymm0, %%ymm0, %%ymm0\n\tvpxor %%ymm1, %%ymm1, %%ymm1\n\t"
      "vpxor %%ymm2, %%ymm2, %%ymm2\n\tvpxor %%ymm3, %%ymm3, %%ymm3\n\t"
      "vpxor %%ymm4, %%ymm4, %%ymm4\n\tvpxor %%ymm5, %%ymm5, %%ymm5\n\t"
      "vpxor %%ymm6, %%ymm6, %%ymm6\n\tvpxor %%ymm7, %%ymm7, %%ymm7\n\t"
      "vpxor %%ymm8, %%ymm8, %%ymm8\n\tvpxor %%ymm9, %%ymm9, %%ymm9\n\t"
      "vpxor %%ymm10, %%ymm10, %%ymm10\n\tvpxor %%ymm11, %%ymm11, %%ymm11\n\t"
      "vpxor %%ymm12, %%ymm12, %%ymm12\n\tvpxor %%ymm13, %%ymm13, %%ymm13\n\t"
      :
      : [x] "m"(x)
      : PEAK_CLOBBERS);
}

// AVX-VNNI vpdpbusd ymm: 32 u8 x s8 multiply-adds into 8 int32, 64 ops. {vex} (braces escaped as %{ %}
// in an asm template) because the assembler would otherwise pick the EVEX form, which needs AVX512-VNNI.
std::pair<double, double> spin_int8(double seconds) {
  __m256i x = _mm256_set1_epi32(0x01010101);
  return timed(seconds, 64.0 * kChains * static_cast<double>(kInner), [&] {
    dot_setup(x);
    for (int64_t k = 0; k < kInner; ++k) __asm__ volatile(PEAK_DP14("%{vex%} vpdpbusd")::: PEAK_CLOBBERS);
  });
}

// The exact int8 product of AVX2 without VNNI, as src/kernels/int8/avx2.cpp computes it: per 32 byte pairs,
// vpsignb (w with x's sign), vpmaddubsw (|x| w, pairs summed in int16), vpmaddwd (by ones, into int32) and
// vpaddd, 64 ops. 6 chains, each with its own temporary: the accumulators' only dependency is vpaddd.
// clang-format off
#define PEAK_MADDUBS(tmp, acc) \
  "vpsignb %%ymm15, %%ymm14, %%" tmp "\n\t" \
  "vpmaddubsw %%" tmp ", %%ymm15, %%" tmp "\n\t" \
  "vpmaddwd %%ymm13, %%" tmp ", %%" tmp "\n\t" \
  "vpaddd %%" tmp ", %%" acc ", %%" acc "\n\t"
#define PEAK_MADDUBS6 \
  PEAK_MADDUBS("ymm6", "ymm0") PEAK_MADDUBS("ymm7", "ymm1") PEAK_MADDUBS("ymm8", "ymm2") \
  PEAK_MADDUBS("ymm9", "ymm3") PEAK_MADDUBS("ymm10", "ymm4") PEAK_MADDUBS("ymm11", "ymm5")
// clang-format on
constexpr int kMaddubsChains = 6;

std::pair<double, double> spin_int8_maddubs(double seconds) {
  const __m256i x = _mm256_set1_epi32(0x01010101), ones = _mm256_set1_epi16(1);
  return timed(seconds, 64.0 * kMaddubsChains * static_cast<double>(kInner), [&] {
    dot_setup(x);
    __asm__ volatile("vmovdqa %[o], %%ymm13" : : [o] "m"(ones) : PEAK_CLOBBERS);
    for (int64_t k = 0; k < kInner; ++k) __asm__ volatile(PEAK_MADDUBS6::: PEAK_CLOBBERS);
  });
}
#else
// clang-format off
#define PEAK_SRC "%%zmm31, %%zmm30, "
#define PEAK_DP16(ins) \
  PEAK_DP(ins, "zmm0") PEAK_DP(ins, "zmm1") PEAK_DP(ins, "zmm2") PEAK_DP(ins, "zmm3") \
  PEAK_DP(ins, "zmm4") PEAK_DP(ins, "zmm5") PEAK_DP(ins, "zmm6") PEAK_DP(ins, "zmm7") \
  PEAK_DP(ins, "zmm8") PEAK_DP(ins, "zmm9") PEAK_DP(ins, "zmm10") PEAK_DP(ins, "zmm11") \
  PEAK_DP(ins, "zmm12") PEAK_DP(ins, "zmm13") PEAK_DP(ins, "zmm14") PEAK_DP(ins, "zmm15")
#define PEAK_CLOBBERS \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", \
  "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", \
  "xmm30", "xmm31"
// clang-format on

// Sets the operands zmm30 and zmm31 to x and zeroes the 16 accumulators.
inline void dot_setup(const __m512i& x) {
  __asm__ volatile(
      "vmovdqa64 %[x], %%zmm30\n\tvmovdqa64 %[x], %%zmm31\n\t"
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\tvpxord %%zmm1, %%zmm1, %%zmm1\n\t"
      "vpxord %%zmm2, %%zmm2, %%zmm2\n\tvpxord %%zmm3, %%zmm3, %%zmm3\n\t"
      "vpxord %%zmm4, %%zmm4, %%zmm4\n\tvpxord %%zmm5, %%zmm5, %%zmm5\n\t"
      "vpxord %%zmm6, %%zmm6, %%zmm6\n\tvpxord %%zmm7, %%zmm7, %%zmm7\n\t"
      "vpxord %%zmm8, %%zmm8, %%zmm8\n\tvpxord %%zmm9, %%zmm9, %%zmm9\n\t"
      "vpxord %%zmm10, %%zmm10, %%zmm10\n\tvpxord %%zmm11, %%zmm11, %%zmm11\n\t"
      "vpxord %%zmm12, %%zmm12, %%zmm12\n\tvpxord %%zmm13, %%zmm13, %%zmm13\n\t"
      "vpxord %%zmm14, %%zmm14, %%zmm14\n\tvpxord %%zmm15, %%zmm15, %%zmm15\n\t"
      :
      : [x] "m"(x)
      : PEAK_CLOBBERS);
}

// AVX512-VNNI vpdpbusd zmm: 64 u8 x s8 multiply-adds into 16 int32, 128 ops.
std::pair<double, double> spin_int8(double seconds) {
  __m512i x = _mm512_set1_epi32(0x01010101);
  return timed(seconds, 128.0 * kChains * static_cast<double>(kInner), [&] {
    dot_setup(x);
    for (int64_t k = 0; k < kInner; ++k) __asm__ volatile(PEAK_DP16("vpdpbusd")::: PEAK_CLOBBERS);
  });
}

// AVX512-BF16 vdpbf16ps zmm: 32 bf16 pairs multiplied and added into 16 fp32, 64 flops. Operands of
// 1.0 keep the accumulators finite.
std::pair<double, double> spin_bf16(double seconds) {
  __m512i x = _mm512_set1_epi32(0x3f803f80);
  return timed(seconds, 64.0 * kChains * static_cast<double>(kInner), [&] {
    dot_setup(x);
    for (int64_t k = 0; k < kInner; ++k) __asm__ volatile(PEAK_DP16("vdpbf16ps")::: PEAK_CLOBBERS);
  });
}
#endif

#endif  // !__aarch64__

// Best of three runs of spin on n threads, in G operations per second. Best of three: the machine is
// shared, so the least disturbed run is the closest to the limit.
double best_of_three(std::pair<double, double> (*spin)(double), double seconds, int n) {
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<std::pair<double, double>> res(static_cast<size_t>(n));
    std::vector<std::thread> ts;
    for (int i = 0; i < n; ++i) ts.emplace_back([&, i] { res[static_cast<size_t>(i)] = spin(seconds); });
    for (auto& t : ts) t.join();
    double ops = 0, wall = 0;
    for (auto& r : res) {
      ops += r.first;
      wall = std::max(wall, r.second);
    }
    best = std::max(best, ops / wall * 1e-9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  int max_threads = argc > 2 ? std::atoi(argv[2]) : static_cast<int>(std::thread::hardware_concurrency());
  if (seconds <= 0 || max_threads < 1) {
    std::fprintf(stderr, "usage: peak [seconds > 0] [max threads >= 1]\n");
    return 2;
  }
#if defined(PEAK_AVX2)
  const bool int8 = __builtin_cpu_supports("avxvnni");
#elif !defined(__aarch64__)
  const bool int8 = __builtin_cpu_supports("avx512vnni"), bf16 = __builtin_cpu_supports("avx512bf16");
#endif
  for (int n = 1; n <= max_threads; ++n) {
    std::printf("{\"threads\":%d,\"gflops\":%.2f", n, best_of_three(spin_fp32, seconds, n));
#if !defined(__aarch64__)
    if (int8) std::printf(",\"int8_gops\":%.2f", best_of_three(spin_int8, seconds, n));
#ifdef PEAK_AVX2
    std::printf(",\"int8_maddubs_gops\":%.2f", best_of_three(spin_int8_maddubs, seconds, n));
#else
    if (bf16) std::printf(",\"bf16_gflops\":%.2f", best_of_three(spin_bf16, seconds, n));
#endif
#endif
    std::printf(",\"l2_read_gbs\":%.2f", best_of_three(spin_read<512>, seconds, n));
    std::printf(",\"l3_read_gbs\":%.2f", best_of_three(spin_read<size_t(64) << 10>, seconds, n));
    std::printf(",\"isa\":\"%s\"}\n", kIsa);
    std::fflush(stdout);
  }
  return 0;
}
