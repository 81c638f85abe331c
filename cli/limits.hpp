// Limits the CLI enforces on its options, defined once.
#pragma once
#include <cstddef>
#include <cstdint>

#include "lstmlm/config.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/limits.hpp"

namespace lstmlm::cli {

// Largest --threads / bench -t value: the engine's own limit.
constexpr int kMaxThreads = lstmlm::kMaxThreads;

// Bytes of one input line (score, predict, bench --input), its line end not counted: reading stops at the
// limit with an InputError, so a file without line ends cannot exhaust memory.
constexpr size_t kMaxLineBytes = size_t{1} << 28;  // 256 MiB

// Rows or contexts per engine batch, bench lengths; generate's ranges (the library's: tasks/limits.hpp).
using tasks::kMaxBatch;
using tasks::kMaxGenerateTokens;
using tasks::kMaxRepeatPenalty;
using tasks::kMaxSamples;
using tasks::kMaxTemperature;
constexpr int kMaxPadTo = lstmlm::kMaxInputLength;  // --pad-to and --window too

// bench: repetitions and warm-up calls per cell, seconds per repetition.
constexpr int kMaxRepetitions = 1000000;
constexpr double kMaxMinTime = 3600;

// The model loader's limits, for bench --shape V,E,H,L (a random model is built from these).
constexpr int64_t kMaxVocab = lstmlm::kMaxVocabSize;
constexpr int kMaxEmbedding = static_cast<int>(lstmlm::kMaxLayerWidth);
constexpr int kMaxHidden = static_cast<int>(lstmlm::kMaxLayerWidth);
constexpr int kMaxLayers = static_cast<int>(lstmlm::kMaxLayerCount);

}  // namespace lstmlm::cli
