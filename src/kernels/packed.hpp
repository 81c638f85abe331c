// Kernel-side layout of the weights, built once when a Model is created (owned by the Model).
#pragma once
#include <cstddef>
#include <memory>

#include "lstmlm/config.hpp"
#include "lstmlm/model.hpp"

namespace lstmlm::detail {

struct PackedWeights;
PackedPtr pack_weights(const ModelConfig& config, const Weights& weights);
size_t packed_bytes(const PackedWeights& packed);

}  // namespace lstmlm::detail
