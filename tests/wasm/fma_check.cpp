// kernels::fma_rn in the WebAssembly build, against x86-64's vfmadd (one rounding by definition): prints a
// hash of its results over a stream of float triples, and the result of each hard case below. The test
// (fma.test.js) compares them with the values the same stream gives on an x86-64 CPU with FMA.
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "kernels/fma.hpp"

namespace {

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return f != f ? 0x7fc00000u : b;  // one NaN
}

}  // namespace

int main() {
  // Exact half-way between two floats in double, a tiny c deciding the side: where a fma computed in
  // double and rounded again is wrong (emscripten's fmaf among them).
  // volatile: computed when the program runs, not folded by the compiler.
  volatile float hard[][3] = {{0x1.55p-5f, -0x1.c9aap+116f, 0x1.acb954p-9f},
                              {-0x1.b5p-7f, -0x1.8a6ap+81f, -0x1.59fed4p+10f},
                              {1.0f + 0x1p-12f, 1.0f - 0x1p-12f, -1.0f},
                              {0x1p-126f, 0x1p-24f, 0x1p-149f}};
  for (auto& h : hard) std::printf("%08x\n", bits(lstmlm::kernels::fma_rn(h[0], h[1], h[2])));
  uint64_t s = 88172645463325252ull, hash = 1469598103934665603ull;
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  for (int i = 0; i < 4000000; ++i) {
    float v[3];
    for (auto& x : v) {
      const uint64_t r = next();
      uint32_t b = static_cast<uint32_t>(r);
      // Half the time a narrow exponent window, where products and addends cancel.
      if (r >> 63) b = (b & 0x807fffffu) | (static_cast<uint32_t>((r >> 32) % 24 + 115) << 23);
      std::memcpy(&x, &b, 4);
    }
    if (i & 1) v[2] = -v[0] * v[1];
    hash = (hash ^ bits(lstmlm::kernels::fma_rn(v[0], v[1], v[2]))) * 1099511628211ull;
  }
  std::printf("%016llx\n", static_cast<unsigned long long>(hash));
}
