#include "engine/packed_model.hpp"

#include <algorithm>
#include <string>

namespace lstmlm::engine {

namespace {

// The one cell-specific place of the engine: which backend layer a config layer becomes, from which
// canonical tensors. A new cell type adds its case here (and its kernels, config and loader); the
// forward pass only sees kernels::RecurrentLayer.
std::unique_ptr<kernels::RecurrentLayer> make_layer(const kernels::Backend& be, const ModelConfig& c,
                                                    const Weights& w, size_t k, bool with_input) {
  const LayerConfig& lc = c.layers[k];
  const LayerWeights& lw = w.layers[k];
  // The fields every cell's weights have.
  auto common = [&](auto& v) {
    v.input = c.layer_input_size(k);
    v.hidden = lc.hidden_size;
    v.w_ih = with_input ? lw.w_ih.data() : nullptr;
    v.w_hh = lw.w_hh.data();
    v.bias = lw.bias.data();
  };
  switch (lc.cell) {
    case CellType::Gru: {
      kernels::GruWeights v;
      common(v);
      v.bias_hh = lc.reset_after ? lw.bias_hh.data() : nullptr;
      v.reset_after = lc.reset_after;
      v.activation = lc.recurrent_activation;
      v.cell_activation = lc.activation;
      return be.gru(v);
    }
    case CellType::Rnn: {
      kernels::RnnWeights v;
      common(v);
      v.activation = lc.activation;
      return be.rnn(v);
    }
    case CellType::Lstm:
      break;
  }
  kernels::LstmWeights v;
  common(v);
  v.proj = lc.proj_size;
  v.w_hr = lc.proj_size > 0 ? lw.w_hr.data() : nullptr;
  v.activation = lc.recurrent_activation;
  v.cell_clip = lc.cell_clip;
  v.cell_activation = lc.activation;
  if (lc.peepholes) {
    v.w_ci = lw.w_ci.data();
    v.w_cf = lw.w_cf.data();
    v.w_co = lw.w_co.data();
  }
  v.proj_clip = lc.proj_clip;
  return be.lstm(v);
}

// table[v] = E[v] W_ih^T + b (one-hot: column v of W_ih + b) in double, laid out by the layer. A blocked
// double GEMM over 256 vocabulary rows at a time (a scalar loop took ~7 s at V 20000, E 256, H 256; the
// block bounds the double scratch to 256 x 4H). A one-hot model has one row more, table[V] = b: the zero
// input vector (the input id V, what Keras' pad_sequences puts before a short one-hot sequence).
void fold_table(const ModelConfig& c, const Weights& w, const kernels::RecurrentLayer& layer0,
                kernels::FloatBuf& table) {
  const int V = c.vocab_size, E = c.embedding_dim, G = layer0.term_width();
  const LayerWeights& w0 = w.layers[0];
  table.assign(static_cast<size_t>(V + (E == 0 ? 1 : 0)) * static_cast<size_t>(G), 0.0f);
  Eigen::MatrixXd wt;  // [E, G H]
  if (E > 0) wt = w0.w_ih.cast<double>().transpose();
  const Eigen::RowVectorXd b = w0.bias.cast<double>().transpose();
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> blk;
  constexpr int kBlock = 256;
  for (int v0 = 0; v0 < V; v0 += kBlock) {
    const int n = std::min(kBlock, V - v0);
    if (E == 0)
      blk = w0.w_ih.middleCols(v0, n).transpose().cast<double>();  // one-hot row v is column v of W_ih
    else
      blk.noalias() = w.embedding.middleRows(v0, n).cast<double>() * wt;
    blk.rowwise() += b;
    for (int i = 0; i < n; ++i)
      layer0.term_from_canonical(blk.row(i).data(), table.data() + static_cast<size_t>(v0 + i) * size_t(G));
  }
  if (E == 0) {
    const Eigen::RowVectorXd zero_input = b;
    layer0.term_from_canonical(zero_input.data(), table.data() + static_cast<size_t>(V) * size_t(G));
  }
}

std::shared_ptr<const PackedModel> pack(const Model& model, const kernels::Backend& be, Model* release) {
  const std::string why = "this model was packed for " + std::string(be.name()) +
                          " and its float weights freed; load it again to run another precision";
  auto packed = [&](size_t k) {
    if (release) release->release_layer_weights(why, k);
  };
  const ModelConfig& c = model.config();
  const Weights& w = model.weights();
  auto pm = std::make_shared<PackedModel>();
  pm->backend = &be;
  pm->vocab_size = c.vocab_size;
  pm->embedding_dim = c.embedding_dim;
  // Layer 0's table: [V, G] floats against the [V, E] embedding. A gathered row always costs less time
  // than the E x G multiply it replaces; the only price is memory, so keep it unless it is both more than
  // 4 MB and more than 8x the embedding (then layer 0 runs one GEMM over all steps like deeper layers).
  // The width G is the layer's own; its packing without W_ih costs nothing, so pack that first.
  auto probe = make_layer(be, c, w, 0, false);
  const size_t table_floats = static_cast<size_t>(c.vocab_size) * static_cast<size_t>(probe->term_width());
  const size_t emb_floats = static_cast<size_t>(c.vocab_size) * static_cast<size_t>(c.embedding_dim);
  const bool fold =
      c.embedding_dim == 0 || table_floats <= (size_t{1} << 20) || table_floats <= 8 * emb_floats;
  if (fold) {
    fold_table(c, w, *probe, pm->table);
    pm->layers.push_back(std::move(probe));
  } else {
    probe.reset();
    pm->layers.push_back(make_layer(be, c, w, 0, true));
    pm->embedding = w.embedding.data();
  }
  packed(0);
  for (size_t k = 1; k < c.layers.size(); ++k) {
    pm->layers.push_back(make_layer(be, c, w, k, true));
    packed(k);
  }
  pm->head = head_layers(model);
  const MatrixRM& dec = model.decoder();
  pm->decoder = be.linear(dec.data(), static_cast<int>(dec.rows()), static_cast<int>(dec.cols()),
                          w.decoder_bias.data());
  if (release) release->release_layer_weights(why);  // and an untied output matrix
  return pm;
}

}  // namespace

size_t PackedModel::bytes() const {
  size_t n = table.size() * sizeof(float) + decoder->bytes();
  for (const auto& l : layers) n += l->bytes();
  return n;
}

std::shared_ptr<const PackedModel> packed_model(const Model& model, Precision precision, Model* release) {
  const kernels::Backend& be = kernels::backend(precision);
  auto p = model.derived("packed:" + std::string(be.name()), [&] { return pack(model, be, release); });
  return std::static_pointer_cast<const PackedModel>(p);
}

}  // namespace lstmlm::engine
