// A Model's weights as one backend packed them, with layer 0's input term folded per token. Built once per
// model and backend, kept with the model (Model::derived) and shared by every Engine on it.
#pragma once
#include <memory>
#include <string_view>
#include <vector>

#include "engine/head.hpp"
#include "kernels/backend.hpp"
#include "lstmlm/model.hpp"

namespace lstmlm::engine {

struct PackedModel {
  const kernels::Backend* backend = nullptr;
  int vocab_size = 0, embedding_dim = 0;
  std::vector<std::unique_ptr<kernels::RecurrentLayer>> layers;
  // table[v] = layer 0's input term for token v ([V][term_width]), computed in double and rounded once,
  // so the float kernels' own rounding never enters it. Empty when larger than what it replaces
  // (fold_input): then layer 0 computes its term from the embedding rows like any other layer.
  kernels::FloatBuf table;
  kernels::FloatBuf embedding_rows;  // [V, E] canonical, read from the model, for the unfolded path
  const float* embedding = nullptr;  // embedding_rows' data
  std::vector<HeadLayer> head;       // format v2: Dense layers before the decoder (fp32, the Model's weights)
  std::unique_ptr<kernels::OutputLayer> decoder;

  bool folded() const { return !table.empty(); }
  const float* table_row(int32_t token) const {
    return table.data() + static_cast<size_t>(token) * static_cast<size_t>(layers[0]->term_width());
  }
  size_t bytes() const;
};

// Whether layer 0's input term is folded into a table of V x term_width floats (PackedModel::table): when
// the model is one-hot, when the table is at most 4 MiB, or when it is no larger than the unfolded layout's
// embedding (V x E floats) and W_ih (term_width x E weights of the precision).
bool fold_input(const ModelConfig& c, int term_width, Precision precision,
                EmbeddingFold fold = EmbeddingFold::Auto);

// The packed form of `model` for `precision`, made on first use. With `release` (the model itself, not yet
// shared), each layer's float weights are freed as soon as the layer is packed (keep_only_packed).
std::shared_ptr<const PackedModel> packed_model(const Model& model, Precision precision = Precision::Fp32,
                                                Model* release = nullptr,
                                                EmbeddingFold fold = EmbeddingFold::Auto);

}  // namespace lstmlm::engine
