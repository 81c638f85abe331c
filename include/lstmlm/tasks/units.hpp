// The logarithm bases a log-probability is printed in: ln (the engine's), log10 (KenLM's) and bits.
#pragma once

namespace lstmlm {

inline constexpr double kLn10 = 2.302585092994045684;  // log10 p = ln p / kLn10
inline constexpr double kLn2 = 0.693147180559945309;   // bits = -ln p / kLn2

}  // namespace lstmlm
