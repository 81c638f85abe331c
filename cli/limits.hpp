// Limits the CLI enforces on its options, defined once.
#pragma once
#include <cstdint>

namespace lstmlm::cli {

// Largest --threads / bench -t value. Mirrors the engine's limit (lstmlm::kMaxThreads, which the engine
// refuses above as well); keep the two equal.
constexpr int kMaxThreads = 256;

// Rows or contexts per engine batch, predict --pad-to, bench lengths.
constexpr int kMaxBatch = 1000000;
constexpr int kMaxPadTo = 1000000;

// generate: tokens per sample (and --repeat-last-n), samples per batch, sampler parameters.
constexpr int kMaxGenerateTokens = 1000000;
constexpr int kMaxSamples = 100000;
constexpr double kMaxTemperature = 1000;
constexpr double kMaxRepeatPenalty = 1000;

// bench: repetitions and warm-up calls per cell, seconds per repetition.
constexpr int kMaxRepetitions = 1000000;
constexpr double kMaxMinTime = 3600;

// The model loader's limits, for bench --shape V,E,H,L (a random model is built from these).
constexpr int64_t kMaxVocab = int64_t{1} << 28;
constexpr int kMaxEmbedding = 65536;
constexpr int kMaxHidden = 65536;
constexpr int kMaxLayers = 256;

}  // namespace lstmlm::cli
