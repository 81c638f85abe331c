// Random models of any shape the format describes, for the engine and kernel tests.
#pragma once
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/model.hpp"

namespace lstmlm::test {

struct LayerSpec {
  LayerSpec(int h, int p = 0, RecurrentActivation a = RecurrentActivation::Sigmoid,
            std::optional<float> cl = {}, Activation ca = Activation::Tanh)
      : hidden(h), proj(p), act(a), clip(cl), cell(ca) {}
  // Format v3 cells.
  static LayerSpec gru(int h, bool reset_after, RecurrentActivation a = RecurrentActivation::Sigmoid,
                       Activation ca = Activation::Tanh) {
    LayerSpec s(h, 0, a, {}, ca);
    s.type = CellType::Gru;
    s.reset_after = reset_after;
    return s;
  }
  static LayerSpec rnn(int h, Activation ca = Activation::Tanh) {
    LayerSpec s(h, 0, RecurrentActivation::Sigmoid, {}, ca);
    s.type = CellType::Rnn;
    return s;
  }
  static LayerSpec peephole(int h, int p = 0, std::optional<float> cl = {}, std::optional<float> pcl = {}) {
    LayerSpec s(h, p, RecurrentActivation::Sigmoid, cl);
    s.peepholes = true;
    s.proj_clip = pcl;
    return s;
  }
  LayerConfig config() const {
    LayerConfig l{hidden, proj, act, clip, cell};
    l.cell = type;
    l.reset_after = reset_after;
    l.peepholes = peepholes;
    l.proj_clip = proj_clip;
    return l;
  }
  int hidden, proj;
  RecurrentActivation act;
  std::optional<float> clip;
  Activation cell;  // format v2 when not tanh
  CellType type = CellType::Lstm;
  bool reset_after = true, peepholes = false;
  std::optional<float> proj_clip = {};
};

// Weights uniform in [-scale, scale] (embedding N(0, 1)); scale > 1/sqrt(H) drives gates into saturation.
inline std::shared_ptr<const Model> make_model(int V, int E, const std::vector<LayerSpec>& specs, bool tied,
                                               uint64_t seed, float scale = 0.5f,
                                               const std::vector<DenseConfig>& head = {}) {
  ModelConfig c;
  c.vocab_size = V;
  c.embedding_dim = E;
  c.tied = tied;
  c.head = head;
  for (const auto& s : specs) c.layers.push_back(s.config());
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::normal_distribution<float> n(0.0f, 1.0f);
  auto fill = [&](MatrixRM& m, int r, int cols, auto& d) {
    m.resize(r, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = d(rng);
  };
  Weights w;
  if (E > 0) fill(w.embedding, V, E, n);
  for (size_t k = 0; k < specs.size(); ++k) {
    const auto& s = specs[k];
    LayerWeights lw;
    const int G = c.layers[k].gate_count() * s.hidden;
    fill(lw.w_ih, G, c.layer_input_size(k), u);
    fill(lw.w_hh, G, c.layers[k].output_size(), u);
    lw.bias.resize(G);
    for (auto& b : lw.bias) b = u(rng);
    if (s.proj > 0) fill(lw.w_hr, s.proj, s.hidden, u);
    if (s.type == CellType::Gru && s.reset_after) {
      lw.bias_hh.resize(G);
      for (auto& b : lw.bias_hh) b = u(rng);
    }
    if (s.peepholes)
      for (Eigen::VectorXf* p : {&lw.w_ci, &lw.w_cf, &lw.w_co}) {
        p->resize(s.hidden);
        for (auto& b : *p) b = u(rng);
      }
    w.layers.push_back(std::move(lw));
  }
  for (size_t k = 0; k < head.size(); ++k) {
    DenseWeights d;
    fill(d.weight, head[k].units, c.head_input_size(k), u);
    d.bias.resize(head[k].units);
    for (auto& b : d.bias) b = u(rng);
    w.head.push_back(std::move(d));
  }
  if (!tied) fill(w.decoder, V, c.decoder_input_size(), u);
  w.decoder_bias.resize(V);
  for (auto& b : w.decoder_bias) b = u(rng);
  std::vector<std::string> toks;
  for (int i = 0; i < V; ++i) toks.push_back(std::string(1, 't') += std::to_string(i));
  return Model::create(std::move(c), Vocab(std::move(toks)), std::move(w));
}

// The model shapes every engine test runs over: odd sizes, projection, clip, Keras activations, one-hot,
// tied.
struct NamedModel {
  std::string name;
  std::shared_ptr<const Model> model;
};
inline std::vector<NamedModel> test_models() {
  using A = RecurrentActivation;
  return {
      {"h1", make_model(5, 3, {{1}}, false, 1, 1.0f)},
      {"h17_l2", make_model(31, 7, {{17}, {3}}, false, 2)},
      {"h100", make_model(70, 20, {{100}}, false, 3, 0.1f)},
      {"proj_l3", make_model(40, 9, {{20, 6}, {17}, {33, 5}}, false, 4)},
      {"onehot_hard", make_model(19, 0, {{17, 0, A::HardSigmoid}}, false, 5, 1.0f)},
      {"keras3_clip",
       make_model(23, 5, {{18, 0, A::HardSigmoidKeras3, 0.4f}, {9, 0, A::Sigmoid, 0.3f}}, false, 6, 1.5f)},
      {"tied", make_model(50, 16, {{24}, {16}}, true, 7)},
      // Tail panels of every width (packed.hpp): H 46 = 2 blocks + 14 units (4 vectors), H 12 (3 vectors);
      // the others above give 1 (H 1, 3, 17, 100) and 2 (H 24) vectors, and V 45 a 3-vector decoder tail.
      {"tails", make_model(45, 6, {{46}, {12}}, false, 9, 0.5f)},
      // A [V, 4H] table over 4 MB and > 8x the embedding: layer 0 takes the GEMM path instead of the table.
      {"no_table", make_model(600, 1, {{448}, {5}}, false, 8, 0.05f)},
      // A 5.1 MB table at 4x the embedding, more than the embedding and W_ih together: unfolded
      // (engine::fold_input; MEDIUM's proportions, E = H).
      {"no_table_4x", make_model(2000, 160, {{160}}, false, 17, 0.1f)},
      // Format v2: cell activations other than tanh, and output heads of Dense layers (one tied).
      {"v2_relu_head", make_model(29, 6,
                                  {{13, 0, A::Sigmoid, {}, Activation::Relu},
                                   {11, 0, A::HardSigmoid, {}, Activation::Linear}},
                                  false, 10, 0.5f, {{7, Activation::Relu}, {9, Activation::Tanh}})},
      {"v2_sigmoid_tied_head", make_model(30, 8, {{10, 0, A::Sigmoid, {}, Activation::Sigmoid}}, true, 11,
                                          0.5f, {{8, Activation::Linear}})},
      // Format v3: the generic cells (kernels/cells), both GRU conventions, the simple RNN, peepholes with
      // both clips, and a stack that mixes them; odd widths for the split steps' unit ranges.
      {"v3_gru", make_model(37, 6, {LayerSpec::gru(19, true), LayerSpec::gru(21, false, A::HardSigmoid)},
                            false, 12, 0.6f)},
      {"v3_gru_onehot", make_model(17, 0, {LayerSpec::gru(33, true)}, false, 13, 0.8f)},
      {"v3_rnn",
       make_model(26, 5, {LayerSpec::rnn(23), LayerSpec::rnn(7, Activation::Relu)}, false, 14, 0.4f)},
      {"v3_peephole",
       make_model(28, 7, {LayerSpec::peephole(18, 6, 0.6f, 0.3f), LayerSpec::peephole(11)}, false, 15, 0.9f)},
      {"v3_mixed",
       make_model(33, 8, {LayerSpec::gru(15, false), {12, 5}, LayerSpec::rnn(8)}, true, 16, 0.5f)},
  };
}

inline std::vector<int32_t> random_tokens(std::mt19937_64& rng, int V, int len) {
  std::uniform_int_distribution<int32_t> d(0, V - 1);
  std::vector<int32_t> s(static_cast<size_t>(len));
  for (auto& t : s) t = d(rng);
  return s;
}

// A state with random contents (so tests do not only start from zeros).
inline State random_state(const Model& m, std::mt19937_64& rng) {
  State s = State::zeros(m);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (auto& v : s.h)
    for (auto& x : v) x = u(rng);
  for (auto& v : s.c)
    for (auto& x : v) x = u(rng);
  return s;
}

// Same shape and the same floats bit for bit (for non-NaN values).
inline bool same(const MatrixRM& a, const MatrixRM& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && std::equal(a.data(), a.data() + a.size(), b.data());
}

}  // namespace lstmlm::test
