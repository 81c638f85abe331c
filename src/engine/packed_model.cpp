#include "engine/packed_model.hpp"

#include <algorithm>
#include <string>

namespace lstmlm::engine {

namespace {

// Rows of a model's matrix for a backend to pack: the array of a model built in memory, or blocks of about
// 1 MB read from the model's file as the packer reaches them (Model::read_rows), so packing holds the packed
// layout and one block, never the matrix's floats.
kernels::Rows model_rows(const Model& m, MatrixKind kind, size_t layer) {
  const auto shape = m.matrix_shape(kind, layer);
  const int64_t rows = shape.first, cols = shape.second;  // not a structured binding: a lambda captures them
  if (rows * cols == 0) return nullptr;
  if (!m.reads_from_file()) return m.matrix(kind, layer).data();
  struct Block {
    int64_t first = 0, count = 0;
    std::vector<float> buf;
  };
  const int64_t per = std::max<int64_t>(1, (int64_t{1} << 18) / cols);
  auto b = std::make_shared<Block>();
  return kernels::Rows(kernels::Rows::Fetch([&m, kind, layer, rows, cols, per, b](size_t row) {
    const auto r = static_cast<int64_t>(row);
    if (r < b->first || r >= b->first + b->count) {
      b->first = r;
      b->count = std::min(per, rows - r);
      b->buf.resize(static_cast<size_t>(b->count * cols));
      m.read_rows(kind, layer, b->first, b->count, b->buf.data());
    }
    return b->buf.data() + static_cast<size_t>((r - b->first) * cols);
  }));
}

// The one cell-specific place of the engine: which backend layer a config layer becomes, from which
// canonical tensors. A new cell type adds its case here (and its kernels, config and loader); the
// forward pass only sees kernels::RecurrentLayer.
std::unique_ptr<kernels::RecurrentLayer> make_layer(const kernels::Backend& be, const Model& m, size_t k,
                                                    bool with_input) {
  const ModelConfig& c = m.config();
  const LayerConfig& lc = c.layers[k];
  const LayerWeights& lw = m.held_weights().layers[k];  // the small tensors; the matrices come as rows
  // The fields every cell's weights have.
  auto common = [&](auto& v) {
    v.input = c.layer_input_size(k);
    v.hidden = lc.hidden_size;
    if (with_input) v.w_ih = model_rows(m, MatrixKind::WeightIh, k);
    v.w_hh = model_rows(m, MatrixKind::WeightHh, k);
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
  if (lc.proj_size > 0) v.w_hr = model_rows(m, MatrixKind::WeightHr, k);
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

// table[v] = E[v] W_ih^T + b (one-hot: column v of W_ih + b) in double, laid out by the layer. Blocked
// double GEMMs: 256 vocabulary rows at a time against W_ih read 512 rows at a time, so the double scratch is
// 256 x G H and 512 x E whatever the model (W_ih whole in double would be 134 MB at H 2048). A one-hot model
// has one row more, table[V] = b: the zero input vector (the input id V, what Keras' pad_sequences puts
// before a short one-hot sequence).
void fold_table(const Model& m, const kernels::RecurrentLayer& layer0, kernels::FloatBuf& table) {
  const ModelConfig& c = m.config();
  const int V = c.vocab_size, E = c.embedding_dim, G = layer0.term_width();
  const auto [GH, in] = m.matrix_shape(MatrixKind::WeightIh, 0);  // [G H, E] (one-hot: [G H, V])
  table.assign(static_cast<size_t>(V + (E == 0 ? 1 : 0)) * static_cast<size_t>(G), 0.0f);
  const Eigen::RowVectorXd b = m.held_weights().layers[0].bias.cast<double>().transpose();
  using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  constexpr int kBlock = 256;
  constexpr int64_t kRows = 512;
  MatD blk, emb;
  MatF rows;
  for (int v0 = 0; v0 < V; v0 += kBlock) {
    const int n = std::min(kBlock, V - v0);
    blk.resize(n, GH);
    if (E > 0) {
      rows.resize(n, E);
      m.read_rows(MatrixKind::Embedding, 0, v0, n, rows.data());
      emb = rows.cast<double>();
    }
    for (int64_t g0 = 0; g0 < GH; g0 += kRows) {
      const int64_t gn = std::min(kRows, GH - g0);
      rows.resize(gn, in);
      m.read_rows(MatrixKind::WeightIh, 0, g0, gn, rows.data());
      if (E == 0)  // one-hot row v is column v of W_ih
        blk.middleCols(g0, gn) = rows.middleCols(v0, n).transpose().cast<double>();
      else
        blk.middleCols(g0, gn).noalias() = emb * rows.cast<double>().transpose();
    }
    blk.rowwise() += b;
    for (int i = 0; i < n; ++i)
      layer0.term_from_canonical(blk.row(i).data(), table.data() + static_cast<size_t>(v0 + i) * size_t(G));
  }
  if (E == 0) {
    const Eigen::RowVectorXd zero_input = b;
    layer0.term_from_canonical(zero_input.data(), table.data() + static_cast<size_t>(V) * size_t(G));
  }
}

size_t weight_bytes(Precision p) { return p == Precision::Int8 ? 1 : p == Precision::Bf16 ? 2 : 4; }

std::shared_ptr<const PackedModel> pack(const Model& model, const kernels::Backend& be, Precision precision,
                                        Model* release, EmbeddingFold fold) {
  const std::string why = "this model was packed for " + std::string(be.name()) +
                          " and its float weights freed; load it again to run another precision or layout";
  auto packed = [&](size_t k) {
    if (release) release->release_layer_weights(why, k);
  };
  const ModelConfig& c = model.config();
  auto pm = std::make_shared<PackedModel>();
  pm->backend = &be;
  pm->vocab_size = c.vocab_size;
  pm->embedding_dim = c.embedding_dim;
  // Layer 0's input term per token: a folded table of V x G floats, gathered per step, or the embedding's
  // V x E floats through layer 0's packed W_ih (G x E weights) like a deeper layer's input. The table saves
  // that product per token and costs memory only, so by default it is kept when it is no larger than what
  // it replaces, or at most 4 MiB (docs/architecture.md#layer-0s-input-term); EmbeddingFold overrides that.
  // A rule of the model's sizes, the precision and the option, never of the batch: the two layouts round
  // differently, so it is part of the bits.
  // The width G is the layer's own; its packing without W_ih costs nothing, so pack that first.
  auto probe = make_layer(be, model, 0, false);
  if (fold_input(c, probe->term_width(), precision, fold)) {
    fold_table(model, *probe, pm->table);
    pm->layers.push_back(std::move(probe));
  } else {
    probe.reset();
    pm->layers.push_back(make_layer(be, model, 0, true));
    const size_t n = static_cast<size_t>(c.vocab_size) * static_cast<size_t>(c.embedding_dim);
    pm->embedding_rows.resize(n);
    model.read_rows(MatrixKind::Embedding, 0, 0, c.vocab_size, pm->embedding_rows.data());
    pm->embedding = pm->embedding_rows.data();
  }
  packed(0);
  for (size_t k = 1; k < c.layers.size(); ++k) {
    pm->layers.push_back(make_layer(be, model, k, true));
    packed(k);
  }
  pm->head = head_layers(model);
  const auto [V, cols] = model.matrix_shape(MatrixKind::Decoder);
  pm->decoder = be.linear(model_rows(model, MatrixKind::Decoder, 0), static_cast<int>(V),
                          static_cast<int>(cols), model.held_weights().decoder_bias.data());
  if (release) release->release_layer_weights(why);  // and an untied output matrix
  return pm;
}

}  // namespace

bool fold_input(const ModelConfig& c, int term_width, Precision precision, EmbeddingFold fold) {
  if (c.embedding_dim == 0) return true;  // one-hot: the table is W_ih itself, transposed
  if (fold != EmbeddingFold::Auto) return fold == EmbeddingFold::Always;
  const size_t V = static_cast<size_t>(c.vocab_size), E = static_cast<size_t>(c.embedding_dim),
               G = static_cast<size_t>(term_width);
  const size_t table = V * G * sizeof(float);
  return table <= (size_t{4} << 20) || table <= V * E * sizeof(float) + G * E * weight_bytes(precision);
}

size_t PackedModel::bytes() const {
  size_t n = (table.size() + embedding_rows.size()) * sizeof(float) + decoder->bytes();
  for (const auto& l : layers) n += l->bytes();
  return n;
}

std::shared_ptr<const PackedModel> packed_model(const Model& model, Precision precision, Model* release,
                                                EmbeddingFold fold) {
  const kernels::Backend& be = kernels::backend(precision);
  static constexpr const char* kFoldKey[] = {"", ":fold", ":product"};
  auto p = model.derived("packed:" + std::string(be.name()) + kFoldKey[static_cast<int>(fold)],
                         [&] { return pack(model, be, precision, release, fold); });
  return std::static_pointer_cast<const PackedModel>(p);
}

}  // namespace lstmlm::engine
