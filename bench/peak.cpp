// Machine FMA peak: a register-only loop of independent fp32 fused multiply-adds, run on 1..N threads.
// Every figure of bench/compare is also read as a fraction of this number.
//
// Why 16 chains: an FMA has a latency of 4 cycles and up to 2 issue per cycle, so at least 8
// independent accumulators are needed to keep both pipes busy; 16 leaves margin and still fits in
// the 32 zmm registers with the two multiplicands. Built by bench/compare (not part of the library):
//   g++ -O2 -mavx512f -pthread bench/peak.cpp -o peak        (AVX2 variant: -mavx2 -mfma -DPEAK_AVX2)
// Usage: peak [seconds per measurement, default 0.5] [max threads, default all cores]
// Prints one JSON object per thread count: {"threads":N,"gflops":X,"isa":"avx512f"}.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

#ifdef PEAK_AVX2
using Vec = __m256;
constexpr int kLanes = 8;
constexpr const char* kIsa = "avx2+fma";
inline Vec set1(float x) { return _mm256_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
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
constexpr const char* kIsa = "avx512f";
inline Vec set1(float x) { return _mm512_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline float sum(Vec v) {
  alignas(64) float f[16];
  _mm512_store_ps(f, v);
  float s = 0;
  for (float x : f) s += x;
  return s;
}
#endif

constexpr int kChains = 16;
constexpr int64_t kInner = 1 << 16;  // FMAs per chain between clock reads

std::atomic<float> sink{0};

// Runs the FMA loop for at least `seconds`; returns FLOPs done and the time taken.
std::pair<double, double> spin(double seconds) {
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

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  int max_threads = argc > 2 ? std::atoi(argv[2]) : static_cast<int>(std::thread::hardware_concurrency());
  if (seconds <= 0 || max_threads < 1) {
    std::fprintf(stderr, "usage: peak [seconds > 0] [max threads >= 1]\n");
    return 2;
  }
  for (int n = 1; n <= max_threads; ++n) {
    // Best of three: the machine is shared, so the least disturbed run is the closest to the limit.
    double best = 0;
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<std::pair<double, double>> res(static_cast<size_t>(n));
      std::vector<std::thread> ts;
      for (int i = 0; i < n; ++i) ts.emplace_back([&, i] { res[static_cast<size_t>(i)] = spin(seconds); });
      for (auto& t : ts) t.join();
      double flops = 0, wall = 0;
      for (auto& r : res) {
        flops += r.first;
        wall = std::max(wall, r.second);
      }
      best = std::max(best, flops / wall * 1e-9);
    }
    std::printf("{\"threads\":%d,\"gflops\":%.2f,\"isa\":\"%s\"}\n", n, best, kIsa);
  }
  return 0;
}
