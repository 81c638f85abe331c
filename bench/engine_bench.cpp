// Quick engine micro-benchmark (not a test; `lstmlm bench` is the user-facing tool).
// Build: g++ -O2 -march=native -std=c++20 -Iinclude -I/usr/include/eigen3 bench/engine_bench.cpp \
//          build/liblstmlm.a -lpthread -o build/engine_bench
// Usage: engine_bench V E H L T batch threads workload(score|predict) [seconds]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>

#include "lstmlm/engine.hpp"

using namespace lstmlm;

int main(int argc, char** argv) {
  if (argc < 9) {
    std::fprintf(stderr, "usage: engine_bench V E H L T batch threads score|predict [seconds]\n");
    return 2;
  }
  int V = std::atoi(argv[1]), E = std::atoi(argv[2]), H = std::atoi(argv[3]), L = std::atoi(argv[4]);
  int T = std::atoi(argv[5]), B = std::atoi(argv[6]), th = std::atoi(argv[7]);
  std::string wl = argv[8];
  double secs = argc > 9 ? std::atof(argv[9]) : 1.0;
  auto model = Model::random(V, E, H, L, 1);
  Engine eng(model, th);
  std::mt19937_64 rng(3);
  Sequences in(static_cast<size_t>(B)), tg(static_cast<size_t>(B));
  for (int r = 0; r < B; ++r)
    for (int t = 0; t < T; ++t) {
      in[size_t(r)].push_back(int32_t(rng() % uint64_t(V)));
      tg[size_t(r)].push_back(int32_t(rng() % uint64_t(V)));
    }
  std::vector<State> st0(size_t(B), State::zeros(*model));
  std::vector<std::vector<float>> sc;
  MatrixRM pred;
  auto call = [&] {
    auto st = st0;
    if (wl == "score")
      eng.score(in, tg, st, sc);
    else
      eng.predict(in, st, pred);
  };
  for (int i = 0; i < 3; ++i) call();
  long calls = 0;
  std::clock_t c0 = std::clock();  // process CPU time: on a loaded shared machine wall time lies
  auto t0 = std::chrono::steady_clock::now();
  double el = 0;
  while (el < secs) {
    call();
    ++calls;
    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double tokens = double(calls) * B * T;

  int in_w = E > 0 ? E : V;

  // nominal (issue 7): 2*4H*(in+H) per layer + 2 H V where the projection is computed
  double nominal = 0;
  for (int l = 0; l < L; ++l) nominal += 2.0 * 4 * H * ((l == 0 ? in_w : H) + H);
  double dec = 2.0 * H * V * (wl == "score" ? 1.0 : 1.0 / T);
  double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  std::printf(
      "V%d E%d H%d L%d T%d b%d t%d %s: wall %.0f tokens/s, %.2f us/call, %.1f GFLOP/s | per CPU-second %.0f "
      "tokens/s, %.2f us/call, %.1f GFLOP/s\n",
      V, E, H, L, T, B, th, wl.c_str(), tokens / el, el / double(calls) * 1e6,
      tokens * (nominal + dec) / el / 1e9, tokens / cpu, cpu / double(calls) * 1e6,
      tokens * (nominal + dec) / cpu / 1e9);

  return 0;
}
