#include "lstmlm/model.hpp"

#include <cmath>
#include <random>

#include "format/tensor_names.hpp"
#include "lstmlm/error.hpp"
#include "model/checks.hpp"

namespace lstmlm {

namespace {

std::string shape_str(Eigen::Index r, Eigen::Index c) {
  std::string s = "[";  // appended, not "[" + ...: GCC 12 -Wrestrict false positive
  s += std::to_string(r);
  s += ", ";
  s += std::to_string(c);
  return s += "]";
}

namespace names = format::tensor_names;

void expect_shape(const MatrixRM& m, Eigen::Index rows, Eigen::Index cols, const std::string& name,
                  const std::string& file) {
  if (m.rows() != rows || m.cols() != cols)
    throw ModelError::about(file, name,
                            "tensor '" + name + "' has shape " + shape_str(m.rows(), m.cols()) +
                                ", expected " + shape_str(rows, cols));
}

void expect_len(const Eigen::VectorXf& v, Eigen::Index n, const std::string& name, const std::string& file) {
  if (v.size() != n)
    throw ModelError::about(file, name,
                            "tensor '" + name + "' has shape [" + std::to_string(v.size()) + "], expected [" +
                                std::to_string(n) + "]");
}

// Checks every tensor against the config (already check_config'ed); names follow weights.safetensors.
void validate(const ModelConfig& c, const Weights& w, const std::string& file) {
  if (c.embedding_dim > 0) expect_shape(w.embedding, c.vocab_size, c.embedding_dim, names::embedding(), file);
  if (w.layers.size() != c.layers.size())
    throw ModelError(file, std::to_string(w.layers.size()) + " LSTM layers, config has " +
                               std::to_string(c.layers.size()));
  for (size_t k = 0; k < c.layers.size(); ++k) {
    const auto& lc = c.layers[k];
    const auto& lw = w.layers[k];
    int g = format::kGateCount * lc.hidden_size;
    expect_shape(lw.w_ih, g, c.layer_input_size(k), names::weight_ih(k), file);
    expect_shape(lw.w_hh, g, lc.output_size(), names::weight_hh(k), file);
    expect_len(lw.bias, g, names::bias_ih(k) + " + " + names::bias_hh(k), file);
    if (lc.proj_size > 0) expect_shape(lw.w_hr, lc.proj_size, lc.hidden_size, names::weight_hr(k), file);
  }
  if (w.head.size() != c.head.size())
    throw ModelError(
        file, std::to_string(w.head.size()) + " head layers, config has " + std::to_string(c.head.size()));
  for (size_t k = 0; k < c.head.size(); ++k) {
    expect_shape(w.head[k].weight, c.head[k].units, c.head_input_size(k), names::head_weight(k), file);
    expect_len(w.head[k].bias, c.head[k].units, names::head_bias(k), file);
  }
  expect_shape(w.decoder, c.vocab_size, c.decoder_input_size(),
               c.tied ? names::embedding() + " (tied decoder)" : names::decoder_weight(), file);
  expect_len(w.decoder_bias, c.vocab_size, names::decoder_bias(), file);
}

}  // namespace

void detail::check_vocab_size(const ModelConfig& config, const Vocab& vocab, const ModelPaths& paths) {
  if (vocab.size() != config.vocab_size)
    throw ModelError(paths.vocab, std::to_string(vocab.size()) + " tokens, but config.json vocab_size is " +
                                      std::to_string(config.vocab_size));
}

Model::Model(ModelConfig config, Vocab vocab, Weights weights, std::string dir)
    : config_(std::move(config)),
      vocab_(std::move(vocab)),
      weights_(std::move(weights)),
      dir_(std::move(dir)) {}

Model::~Model() = default;

std::shared_ptr<const Model> Model::create(ModelConfig config, Vocab vocab, Weights weights) {
  const ModelPaths paths;              // no directory: errors name the files by their bare names
  check_config(config, paths.config);  // Model::load has it from parse_config
  detail::check_vocab_size(config, vocab, paths);
  return build(std::move(config), std::move(vocab), std::move(weights), paths, {});
}

std::shared_ptr<const Model> Model::build(ModelConfig config, Vocab vocab, Weights weights,
                                          const ModelPaths& paths, std::vector<std::string> warnings) {
  if (config.tied) weights.decoder = weights.embedding;
  validate(config, weights, paths.weights);
  std::shared_ptr<Model> m(new Model(std::move(config), std::move(vocab), std::move(weights), paths.dir));
  m->warnings_ = std::move(warnings);
  m->tokenizer_ = std::make_unique<const Tokenizer>(m->config_.tokenizer, m->vocab_, paths.config);
  return m;
}

std::shared_ptr<const Model> Model::random(int vocab_size, int embedding_dim, int hidden_size, int num_layers,
                                           uint64_t seed) {
  if (vocab_size < 1 || vocab_size > kMaxVocabSize || embedding_dim < 0 || embedding_dim > kMaxLayerWidth ||
      hidden_size < 1 || hidden_size > kMaxLayerWidth || num_layers < 1 || num_layers > kMaxLayerCount)
    throw UsageError("random model: shape V,E,H,L needs V in [1, " + std::to_string(kMaxVocabSize) +
                     "], E in [0, " + std::to_string(kMaxLayerWidth) + "], H in [1, " +
                     std::to_string(kMaxLayerWidth) + "], L in [1, " + std::to_string(kMaxLayerCount) + "]");
  ModelConfig c;
  c.vocab_size = vocab_size;
  c.embedding_dim = embedding_dim;
  for (int k = 0; k < num_layers; ++k)
    c.layers.push_back(LayerConfig{hidden_size, 0, RecurrentActivation::Sigmoid, {}});
  c.source = {{"framework", "random"}, {"seed", seed}};
  std::mt19937_64 rng(seed);
  // PyTorch's nn.LSTM initialisation: U(-1/sqrt(H), 1/sqrt(H)).
  float a = 1.0f / std::sqrt(static_cast<float>(hidden_size));
  std::uniform_real_distribution<float> u(-a, a);
  std::normal_distribution<float> n(0.0f, 1.0f);
  auto fill = [&](auto& m, auto& dist) {
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = dist(rng);
  };
  Weights w;
  if (embedding_dim > 0) {
    w.embedding.resize(vocab_size, embedding_dim);
    fill(w.embedding, n);
  }
  for (int k = 0; k < num_layers; ++k) {
    LayerWeights lw;
    lw.w_ih.resize(format::kGateCount * hidden_size, c.layer_input_size(static_cast<size_t>(k)));
    lw.w_hh.resize(format::kGateCount * hidden_size, hidden_size);
    lw.bias.resize(format::kGateCount * hidden_size);
    fill(lw.w_ih, u);
    fill(lw.w_hh, u);
    fill(lw.bias, u);
    w.layers.push_back(std::move(lw));
  }
  w.decoder.resize(vocab_size, hidden_size);
  w.decoder_bias.resize(vocab_size);
  fill(w.decoder, u);
  fill(w.decoder_bias, u);
  std::vector<std::string> toks;
  for (int i = 0; i < vocab_size; ++i)
    toks.push_back(std::string(1, 't') +=
                   std::to_string(i));  // not "t" + ...: GCC 12 -Wrestrict false positive
  return create(std::move(c), Vocab(std::move(toks)), std::move(w));
}

int64_t Model::parameter_count() const {
  int64_t n = weights_.embedding.size();
  for (const auto& l : weights_.layers) n += l.w_ih.size() + l.w_hh.size() + l.bias.size() + l.w_hr.size();
  for (const auto& d : weights_.head) n += d.weight.size() + d.bias.size();
  if (!config_.tied) n += weights_.decoder.size();
  return n + weights_.decoder_bias.size();
}

size_t Model::memory_bytes() const {
  size_t n = sizeof(float) * static_cast<size_t>(weights_.embedding.size() + weights_.decoder.size() +
                                                 weights_.decoder_bias.size());
  for (const auto& l : weights_.layers)
    n += sizeof(float) * static_cast<size_t>(l.w_ih.size() + l.w_hh.size() + l.bias.size() + l.w_hr.size());
  for (const auto& d : weights_.head)
    n += sizeof(float) * static_cast<size_t>(d.weight.size() + d.bias.size());
  return n;
}

std::shared_ptr<const void> Model::derived(const std::string& key,
                                           const std::function<std::shared_ptr<const void>()>& make) const {
  std::lock_guard<std::mutex> lock(derived_mu_);
  auto it = derived_.find(key);
  if (it == derived_.end()) it = derived_.emplace(key, make()).first;
  return it->second;
}

}  // namespace lstmlm
