// rnnlm 0.3e's exponential (ExpKind::Rnnlm): Schraudolph's approximation, which writes an affine function of
// the argument into the high 32 bits of a double (low bits zero). Within about 4% of exp; a model trained
// with it is scored with it, or its probabilities differ from its trainer's by as much.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace lstmlm::engine {

inline double rnnlm_exp(double y) {
  // Callers clip y to [-50, 50]; outside a range the conversion to int32 holds (NaN from a NaN weight
  // included) the result is what exp gives, never an undefined conversion.
  if (!(y > -700.0 && y < 700.0)) return std::exp(y);
  constexpr double kScale = 1048576.0 / 0.69314718055994530942;  // 2^20 / ln 2
  constexpr double kOffset = 1072693248.0 - 60801.0;             // the exponent bias, less the error shift
  // The product and the sum are rounded apart (exact.cpp is compiled without contraction into an FMA), then
  // truncated toward zero, as the C conversion to int that rnnlm uses.
  const auto hi = static_cast<int32_t>(kScale * y + kOffset);
  const uint64_t bits = uint64_t(uint32_t(hi)) << 32;
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

}  // namespace lstmlm::engine
