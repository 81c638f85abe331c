// The logarithm bases a log-probability is printed in: ln (the engine's), log10 (KenLM's) and bits.
#pragma once

namespace lstmlm {

// --units: Default prints ln p as "logprob" and log10 p as "log10prob" (the historic fields); every other
// value prints one field per log-prob: "logprob" (ln), "log10prob" (log10) or "surprisal" (-log2 p). Prob
// prints a word's probability p as "prob" and the totals of a line and of the input as "logprob" (ln: a
// product of probabilities underflows).
enum class Units { Default, Ln, Log10, Bits, Prob };

inline constexpr double kLn10 = 2.302585092994045684;  // log10 p = ln p / kLn10
inline constexpr double kLn2 = 0.693147180559945309;   // bits = -ln p / kLn2

}  // namespace lstmlm
