// Keras-style description of a model (`lstmlm info`): layers with output shapes and parameter counts.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lstmlm/model.hpp"

namespace lstmlm {

struct LayerSummary {
  std::string name;   // embedding, lstm_l0, lstm_l1, ..., decoder (the keys of source.trainable)
  std::string type;   // Embedding, LSTM, Dense
  int64_t width = 0;  // last dimension of the output, whose shape is (batch, time, width)
  int64_t params = 0;
  std::optional<bool> trainable;  // empty when the source does not say (config.source.trainable)
  std::string note;               // e.g. "tied to embedding", "proj 256, hard_sigmoid"
};

struct ModelSummary {
  std::vector<LayerSummary> layers;
  int64_t total_params = 0;  // == Model::parameter_count()
  // Present only when config.source.trainable exists; layers it does not list count as trainable.
  std::optional<int64_t> trainable_params, non_trainable_params;
};

ModelSummary summarize(const Model& model);

}  // namespace lstmlm
