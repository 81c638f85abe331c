// The ranges the tasks accept for their options, defined once: each options struct's validate() enforces
// them, and the front ends (CLI, Python, server, C API) parse into these ranges and call validate().
#pragma once
#include "lstmlm/config.hpp"

namespace lstmlm::tasks {

// Rows or contexts per engine batch (score, predict, fidelity, rescore).
inline constexpr int kMaxBatch = 1000000;

// generate: tokens per sample (and the repeat penalty's history), samples per call, sampler parameters.
inline constexpr int kMaxGenerateTokens = 1000000;
inline constexpr int kMaxSamples = 100000;
// The bytes of a prefix (the word being typed): far above any word, and a character model's candidates each
// hold it, so it bounds what one request can make the server write.
inline constexpr size_t kMaxPrefixBytes = 256;
inline constexpr double kMaxTemperature = 1000;
inline constexpr double kMaxRepeatPenalty = 1000;
// Beam search: hypotheses kept per step (each holds a recurrent state; K x K candidates are merged per step)
// and the largest length-penalty exponent.
inline constexpr int kMaxBeamSize = 1000;
inline constexpr double kMaxLengthPenalty = 10;
// A logit bias, in natural-log units (a boost's range).
inline constexpr double kMaxLogitBias = 100;

}  // namespace lstmlm::tasks
