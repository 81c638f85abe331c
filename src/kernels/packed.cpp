#include "kernels/packed.hpp"

#include <algorithm>

namespace lstmlm::detail {

namespace {

// Gate-blocked column index of gate g of unit `unit` in a layer of H units (see packed.hpp).
int gate_col(int g, int unit, int H) {
  const int full = H / kUnitBlock * kUnitBlock;
  if (unit < full) return (unit / kUnitBlock) * kPanel + g * kUnitBlock + unit % kUnitBlock;
  const int t = H - full;
  return full / kUnitBlock * kPanel + g * t + (unit - full);
}

// Gate columns in memory for H units: 64 per full block, the tail's 4t rounded up to 16.
int gate_columns(int H) {
  const int t = H % kUnitBlock;
  return H / kUnitBlock * kPanel + round_up(4 * t, kLanes16);
}

// Packs W^T for a [4H, K] gate matrix into gate-blocked columns (see packed.hpp).
PackedMat pack_gates(const MatrixRM& w, int H) {
  PackedMat p;
  p.K = static_cast<int>(w.cols());
  p.N = p.Np = gate_columns(H);
  p.full = H / kUnitBlock;
  p.tail = (p.Np - p.full * kPanel) / kLanes16;
  p.data.assign(static_cast<size_t>(p.Np) * p.K, 0.0f);
  for (int g = 0; g < 4; ++g)
    for (int unit = 0; unit < H; ++unit) {
      const int col = gate_col(g, unit, H);
      for (int k = 0; k < p.K; ++k) p.data[p.index(col, k)] = w(g * H + unit, k);
    }
  return p;
}

}  // namespace

PackedMat pack_transposed(const MatrixRM& m) {
  PackedMat p;
  p.K = static_cast<int>(m.cols());
  p.N = static_cast<int>(m.rows());
  p.full = p.N / kPanel;
  p.tail = round_up(p.N - p.full * kPanel, kLanes16) / kLanes16;
  p.Np = p.full * kPanel + p.tail * kLanes16;
  p.data.assign(static_cast<size_t>(p.Np) * p.K, 0.0f);
  for (int j = 0; j < p.N; ++j)
    for (int k = 0; k < p.K; ++k) p.data[p.index(j, k)] = m(j, k);
  return p;
}

PackedPtr pack_weights(const ModelConfig& config, const Weights& weights) {
  auto pw = std::make_unique<PackedWeights>();
  pw->V = config.vocab_size;
  pw->E = config.embedding_dim;
  int width = round_up(std::max(pw->E, 1), kPanel);
  for (size_t k = 0; k < config.layers.size(); ++k) {
    const auto& lc = config.layers[k];
    const auto& lw = weights.layers[k];
    PackedLayer pl;
    pl.H = lc.hidden_size;
    pl.Hp = round_up(pl.H, kUnitBlock);
    pl.G = gate_columns(pl.H);
    pl.in = config.layer_input_size(k);
    pl.out = lc.output_size();
    pl.P = lc.proj_size;
    pl.act = lc.recurrent_activation;
    pl.clip = lc.cell_clip;
    pl.w_hh = pack_gates(lw.w_hh, pl.H);
    pl.bias.assign(static_cast<size_t>(pl.G), 0.0f);
    for (int g = 0; g < 4; ++g)
      for (int u = 0; u < pl.H; ++u)
        pl.bias[static_cast<size_t>(gate_col(g, u, pl.H))] = lw.bias(g * pl.H + u);
    if (pl.P > 0) pl.w_hr = pack_transposed(lw.w_hr);
    width = std::max({width, round_up(pl.Hp, kPanel), round_up(pl.out, kPanel)});
    pw->max_gates = std::max(pw->max_gates, pl.G);
    pw->max_hp = std::max(pw->max_hp, pl.Hp);
    pw->layers.push_back(std::move(pl));
  }
  pw->max_width = width;

  // Layer 0's table: [V, G] floats against the [V, E] embedding. A gathered row always costs less time
  // than the E x G multiply it replaces; the only price is memory, so keep it unless it is both more than
  // 4 MB and more than 8x the embedding (then layer 0 runs one GEMM over all steps like deeper layers).
  PackedLayer& l0 = pw->layers[0];
  const auto& w0 = weights.layers[0];
  size_t table_floats = static_cast<size_t>(pw->V) * l0.G;
  size_t emb_floats = static_cast<size_t>(pw->V) * pw->E;
  pw->use_table = pw->E == 0 || table_floats <= (size_t{1} << 20) || table_floats <= 8 * emb_floats;
  if (pw->use_table) {
    pw->table.assign(table_floats, 0.0f);
    // x W^T + b in double, rounded once to float: the float kernels' own rounding never enters the table.
    // A blocked double GEMM over 256 vocabulary rows at a time (a scalar loop took ~7 s at V 20000,
    // E 256, H 256; the block bounds the double scratch to 256 x 4H).
    Eigen::MatrixXd wt;  // [E, 4H]
    if (pw->E > 0) wt = w0.w_ih.cast<double>().transpose();
    const Eigen::RowVectorXd b = w0.bias.cast<double>().transpose();
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> blk;
    constexpr int kBlock = 256;
    for (int v0 = 0; v0 < pw->V; v0 += kBlock) {
      const int n = std::min(kBlock, pw->V - v0);
      if (pw->E == 0)
        blk = w0.w_ih.middleCols(v0, n).transpose().cast<double>();  // one-hot row v is column v of W_ih
      else
        blk.noalias() = weights.embedding.middleRows(v0, n).cast<double>() * wt;
      blk.rowwise() += b;
      for (int i = 0; i < n; ++i) {
        float* row = pw->table.data() + static_cast<size_t>(v0 + i) * l0.G;
        for (int g = 0; g < 4; ++g)
          for (int u = 0; u < l0.H; ++u) row[gate_col(g, u, l0.H)] = static_cast<float>(blk(i, g * l0.H + u));
      }
    }
  } else {
    l0.w_ih = pack_gates(w0.w_ih, l0.H);
    pw->embedding = weights.embedding.data();
  }
  for (size_t k = 1; k < pw->layers.size(); ++k)
    pw->layers[k].w_ih = pack_gates(weights.layers[k].w_ih, pw->layers[k].H);

  pw->decoder = pack_transposed(weights.decoder);
  pw->decoder_bias.assign(static_cast<size_t>(pw->decoder.Np), 0.0f);
  for (int v = 0; v < pw->V; ++v) pw->decoder_bias[static_cast<size_t>(v)] = weights.decoder_bias(v);
  return PackedPtr(pw.release());
}

size_t packed_bytes(const PackedWeights& p) {
  auto mat = [](const PackedMat& m) { return m.data.size(); };
  size_t n = p.table.size() + mat(p.decoder) + p.decoder_bias.size();
  for (const auto& l : p.layers) n += mat(l.w_ih) + mat(l.w_hh) + l.bias.size() + mat(l.w_hr);
  return n * sizeof(float);
}

void PackedDeleter::operator()(const PackedWeights* p) const { delete p; }

}  // namespace lstmlm::detail
