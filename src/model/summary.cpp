#include "lstmlm/summary.hpp"

#include <memory>

namespace lstmlm {

namespace {

ModelSummary count(const Model& model) {
  const ModelConfig& c = model.config();
  const Weights& w = model.held_weights();
  // A big matrix's size, in memory or left in the file.
  auto size = [&](MatrixKind kind, size_t layer = 0) {
    const auto [rows, cols] = model.matrix_shape(kind, layer);
    return rows * cols;
  };
  const nlohmann::json* flags = nullptr;
  if (auto it = c.source.find("trainable"); it != c.source.end() && it->is_object()) flags = &*it;
  auto trainable = [&](const std::string& name) -> std::optional<bool> {
    if (!flags) return std::nullopt;
    auto it = flags->find(name);
    return it == flags->end() || !it->is_boolean() ? true : it->get<bool>();
  };

  ModelSummary s;
  if (c.embedding_dim > 0)
    s.layers.push_back(
        {"embedding", "Embedding", c.embedding_dim, size(MatrixKind::Embedding), trainable("embedding"), ""});
  for (size_t k = 0; k < c.layers.size(); ++k) {
    const auto& l = c.layers[k];
    const auto& lw = w.layers[k];
    std::string note = "hidden " + std::to_string(l.hidden_size);
    if (l.proj_size > 0) note += ", proj " + std::to_string(l.proj_size);
    const CellTraits& cell = cell_traits(l.cell);
    if (cell.gated) note += std::string(", ") + to_string(l.recurrent_activation);
    if (l.activation != Activation::Tanh) note += std::string(", activation ") + to_string(l.activation);
    if (l.cell_clip) note += ", cell_clip " + std::to_string(*l.cell_clip);
    if (l.peepholes) note += ", peepholes";
    if (l.proj_clip) note += ", proj_clip " + std::to_string(*l.proj_clip);
    if (cell.reset_gate) note += l.reset_after ? ", reset_after" : ", reset before";
    // One bias vector of G H, as Keras counts it (PyTorch stores two: bias_ih and bias_hh); a GRU with
    // reset_after has two, as Keras' GRU does.
    const int64_t p = size(MatrixKind::WeightIh, k) + size(MatrixKind::WeightHh, k) + lw.bias.size() +
                      lw.bias_hh.size() + size(MatrixKind::WeightHr, k) + lw.w_ci.size() + lw.w_cf.size() +
                      lw.w_co.size();
    // The names the `source.trainable` convention keys by: the cell's (gru_l0, rnn_l1, lstm_l2).
    std::string name = std::string(to_string(l.cell)) + "_l" + std::to_string(k);
    s.layers.push_back({name, cell.keras_name, l.output_size(), p, trainable(name), note});
  }
  for (size_t k = 0; k < c.head.size(); ++k) {
    const std::string name = "head_" + std::to_string(k);
    s.layers.push_back({name, "Dense", c.head[k].units, w.head[k].weight.size() + w.head[k].bias.size(),
                        trainable(name), to_string(c.head[k].activation)});
  }
  // A tied decoder shares embedding.weight: only its bias is a parameter of its own.
  int64_t dec = w.decoder_bias.size() + (c.tied ? 0 : size(MatrixKind::Decoder));
  s.layers.push_back({"decoder", "Dense", c.vocab_size, dec, trainable("decoder"),
                      c.tied          ? "weight tied to embedding"
                      : c.classes > 0 ? "the words of a class, softmax per class"
                                      : ""});
  // Format v5: a class-factored output's class layer and the direct connections' hash table.
  if (c.classes > 0)
    s.layers.push_back({"classes", "Dense", c.classes, w.class_weight.size() + w.class_bias.size(),
                        trainable("classes"), "word -> class map of " + std::to_string(c.vocab_size)});
  if (c.direct_size > 0)
    s.layers.push_back({"direct", "HashedNgrams", c.direct_size, c.direct_size, trainable("direct"),
                        "rnnlm's direct connections, order " + std::to_string(c.direct_order)});

  for (const auto& l : s.layers) s.total_params += l.params;
  if (flags) {
    s.trainable_params = 0;
    for (const auto& l : s.layers)
      if (*l.trainable) *s.trainable_params += l.params;
    s.non_trainable_params = s.total_params - *s.trainable_params;
  }
  return s;
}

}  // namespace

// Counted from the weights' sizes, once: a model whose float weights were released after packing
// (keep_only_packed, which summarizes first) keeps its counts.
ModelSummary summarize(const Model& model) {
  auto p = model.derived("summary", [&] { return std::make_shared<const ModelSummary>(count(model)); });
  return *std::static_pointer_cast<const ModelSummary>(p);
}

}  // namespace lstmlm
