// fma(a, b, c) rounded once, for the plain-code kernels. Native targets have it from the CPU or libm;
// WebAssembly has no fma instruction, and emscripten's fmaf (musl's, computed in double) rounds twice in
// the rare cases where a * b + c in double lands exactly half-way between two floats, because musl corrects
// those through the floating-point exception flags that WebAssembly does not have (tests/wasm/fma). The
// WebAssembly build computes it in double rounded to odd, which rounds once: a float's 24 bits and the 53
// of a double leave the 2 bits rounding to odd needs (Boldo and Melquiond, "When double rounding is
// odd", 2005), so every kernel gives the native bits.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace lstmlm::kernels {

#if defined(__wasm__)
inline float fma_rn(float a, float b, float c) {
  const double p = static_cast<double>(a) * static_cast<double>(b);  // exact: 48 bits at most
  const double s = p + static_cast<double>(c);
  if (!std::isfinite(s)) return static_cast<float>(s);
  // s is p + c rounded to nearest; e what that rounding lost, exactly (Knuth's TwoSum).
  const double v = s - p;
  const double e = (p - (s - v)) + (static_cast<double>(c) - v);
  uint64_t bits;
  std::memcpy(&bits, &s, sizeof bits);
  // Rounded to odd: of the two doubles around the exact sum, the one with an odd last bit. s is one of
  // them; when its last bit is even, the other one, one step towards the lost part.
  if (e != 0 && (bits & 1u) == 0) bits += ((e > 0) == (s > 0)) ? 1 : static_cast<uint64_t>(-1);
  double odd;
  std::memcpy(&odd, &bits, sizeof odd);
  return static_cast<float>(odd);
}
#else
inline float fma_rn(float a, float b, float c) { return std::fma(a, b, c); }
#endif

}  // namespace lstmlm::kernels
