#include "lstmlm/model.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

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

// A matrix's shape: in memory, or of the tensor left in the file.
struct Shapes {
  const Weights& w;
  const Model::FileMatrices& in_file;
  std::pair<Eigen::Index, Eigen::Index> of(const MatrixRM& m, MatrixKind kind, size_t layer = 0) const {
    auto it = in_file.find({static_cast<int>(kind), layer});
    if (it != in_file.end()) return {it->second.rows, it->second.cols};
    return {m.rows(), m.cols()};
  }
};

void expect_shape(std::pair<Eigen::Index, Eigen::Index> m, Eigen::Index rows, Eigen::Index cols,
                  const std::string& name, const std::string& file) {
  if (m.first != rows || m.second != cols)
    throw ModelError::about(file, name,
                            "tensor '" + name + "' has shape " + shape_str(m.first, m.second) +
                                ", expected " + shape_str(rows, cols));
}
void expect_shape(const MatrixRM& m, Eigen::Index rows, Eigen::Index cols, const std::string& name,
                  const std::string& file) {
  expect_shape(std::pair<Eigen::Index, Eigen::Index>{m.rows(), m.cols()}, rows, cols, name, file);
}

void expect_len(const Eigen::VectorXf& v, Eigen::Index n, const std::string& name, const std::string& file) {
  if (v.size() != n)
    throw ModelError::about(file, name,
                            "tensor '" + name + "' has shape [" + std::to_string(v.size()) + "], expected [" +
                                std::to_string(n) + "]");
}

int64_t layer_floats(const LayerWeights& l) {
  return l.w_ih.size() + l.w_hh.size() + l.bias.size() + l.bias_hh.size() + l.w_hr.size() + l.w_ci.size() +
         l.w_cf.size() + l.w_co.size();
}

// Checks every tensor against the config (already check_config'ed); names follow weights.safetensors.
void validate(const ModelConfig& c, const Weights& w, const Model::FileMatrices& in_file,
              const std::string& file) {
  const Shapes sh{w, in_file};
  if (c.embedding_dim > 0)
    expect_shape(sh.of(w.embedding, MatrixKind::Embedding), c.vocab_size, c.embedding_dim, names::embedding(),
                 file);
  if (w.layers.size() != c.layers.size())
    throw ModelError(file, std::to_string(w.layers.size()) + " recurrent layers, config has " +
                               std::to_string(c.layers.size()));
  for (size_t k = 0; k < c.layers.size(); ++k) {
    const auto& lc = c.layers[k];
    const auto& lw = w.layers[k];
    const std::string_view cell = to_string(lc.cell);
    const int g = lc.gate_count() * lc.hidden_size;
    expect_shape(sh.of(lw.w_ih, MatrixKind::WeightIh, k), g, c.layer_input_size(k), names::weight_ih(k, cell),
                 file);
    expect_shape(sh.of(lw.w_hh, MatrixKind::WeightHh, k), g, lc.output_size(), names::weight_hh(k, cell),
                 file);
    const bool split_bias = lc.cell == CellType::Gru && lc.reset_after;
    expect_len(
        lw.bias, g,
        split_bias ? names::bias_ih(k, cell) : names::bias_ih(k, cell) + " + " + names::bias_hh(k, cell),
        file);
    expect_len(lw.bias_hh, split_bias ? g : 0, names::bias_hh(k, cell), file);
    if (lc.proj_size > 0)
      expect_shape(sh.of(lw.w_hr, MatrixKind::WeightHr, k), lc.proj_size, lc.hidden_size,
                   names::weight_hr(k, cell), file);
    const int peep = lc.peepholes ? lc.hidden_size : 0;
    expect_len(lw.w_ci, peep, names::weight_ci(k, cell), file);
    expect_len(lw.w_cf, peep, names::weight_cf(k, cell), file);
    expect_len(lw.w_co, peep, names::weight_co(k, cell), file);
  }
  if (w.head.size() != c.head.size())
    throw ModelError(
        file, std::to_string(w.head.size()) + " head layers, config has " + std::to_string(c.head.size()));
  for (size_t k = 0; k < c.head.size(); ++k) {
    expect_shape(w.head[k].weight, c.head[k].units, c.head_input_size(k), names::head_weight(k), file);
    expect_len(w.head[k].bias, c.head[k].units, names::head_bias(k), file);
  }
  expect_shape(c.tied ? sh.of(w.embedding, MatrixKind::Embedding) : sh.of(w.decoder, MatrixKind::Decoder),
               c.vocab_size, c.decoder_input_size(),
               c.tied ? names::embedding() + " (tied decoder)" : names::decoder_weight(), file);
  expect_len(w.decoder_bias, c.vocab_size, names::decoder_bias(), file);
}

}  // namespace

void model::check_vocab_size(const ModelConfig& config, const Vocab& vocab, const ModelPaths& paths) {
  if (vocab.size() != config.vocab_size)
    throw ModelError(paths.vocab, std::to_string(vocab.size()) + " tokens, but config.json vocab_size is " +
                                      std::to_string(config.vocab_size));
}

Model::Model(ModelConfig config, Vocab vocab, Weights weights, std::string dir)
    : config_(std::move(config)),
      vocab_(std::move(vocab)),
      weights_(std::move(weights)),
      dir_(std::move(dir)) {
  parameter_count_ = weights_.embedding.size();
  for (const auto& l : weights_.layers) parameter_count_ += layer_floats(l);
  for (const auto& d : weights_.head) parameter_count_ += d.weight.size() + d.bias.size();
  if (!config_.tied) parameter_count_ += weights_.decoder.size();
  parameter_count_ += weights_.decoder_bias.size();
}

Model::~Model() = default;

std::shared_ptr<const Model> Model::create(ModelConfig config, Vocab vocab, Weights weights) {
  const ModelPaths paths;              // no directory: errors name the files by their bare names
  check_config(config, paths.config);  // Model::load has it from parse_config
  model::check_vocab_size(config, vocab, paths);
  return build(std::move(config), std::move(vocab), std::move(weights), paths, {});
}

namespace {

class Fnv1a {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 0x100000001b3ULL;
  }
  void text(const std::string& s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  void u64(uint64_t v) { bytes(&v, sizeof v); }
  // A tensor's size and its first and last 64 floats: cheap for any model, and a retrained model differs.
  void sample(const float* p, size_t n) {
    u64(n);
    const size_t k = std::min<size_t>(n, 64);
    if (k > 0) bytes(p, k * sizeof(float));
    if (n > k) bytes(p + (n - k), k * sizeof(float));
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

// A tensor left in the file is sampled from there: the same floats, so the same fingerprint.
uint64_t fingerprint_of(const ModelConfig& c, const Vocab& v, const Weights& w, const SafetensorsFile* file,
                        const Model::FileMatrices& in_file) {
  Fnv1a f;
  auto matrix = [&](const MatrixRM& m, MatrixKind kind, size_t layer = 0) {
    auto it = in_file.find({static_cast<int>(kind), layer});
    if (it == in_file.end() || !file) return f.sample(m.data(), size_t(m.size()));
    const TensorInfo& t = it->second.tensor;
    const size_t n = SafetensorsFile::element_count(t), k = std::min<size_t>(n, 64);
    std::vector<float> ends(n > k ? 2 * k : k);
    file->read_f32(t, 0, k, ends.data());
    if (n > k) file->read_f32(t, n - k, k, ends.data() + k);
    f.u64(n);
    f.bytes(ends.data(), ends.size() * sizeof(float));
  };
  f.text(config_to_json(c).dump());
  for (const auto& t : v.tokens()) f.text(t);
  matrix(w.embedding, MatrixKind::Embedding);
  for (size_t k = 0; k < w.layers.size(); ++k) {
    const LayerWeights& l = w.layers[k];
    matrix(l.w_ih, MatrixKind::WeightIh, k);
    matrix(l.w_hh, MatrixKind::WeightHh, k);
    matrix(l.w_hr, MatrixKind::WeightHr, k);
    f.sample(l.bias.data(), size_t(l.bias.size()));
  }
  for (const auto& d : w.head) f.sample(d.weight.data(), size_t(d.weight.size()));
  matrix(w.decoder, MatrixKind::Decoder);
  f.sample(w.decoder_bias.data(), size_t(w.decoder_bias.size()));
  return f.value();
}

}  // namespace

std::shared_ptr<const Model> Model::build(ModelConfig config, Vocab vocab, Weights weights,
                                          const ModelPaths& paths, std::vector<std::string> warnings,
                                          std::shared_ptr<const SafetensorsFile> file, FileMatrices in_file) {
  if (config.tied) weights.decoder = MatrixRM();  // the embedding is the decoder (Model::decoder())
  validate(config, weights, in_file, paths.weights);
  model::check_v5_weights(config, weights, paths.weights);
  const uint64_t fingerprint = fingerprint_of(config, vocab, weights, file.get(), in_file);
  std::shared_ptr<Model> m(new Model(std::move(config), std::move(vocab), std::move(weights), paths.dir));
  for (const auto& [key, fm] : in_file)
    if (!(key.first == static_cast<int>(MatrixKind::Decoder) && m->config_.tied))
      m->parameter_count_ += fm.rows * fm.cols;
  m->file_ = in_file.empty() ? nullptr : std::move(file);
  m->in_file_ = std::move(in_file);
  m->warnings_ = std::move(warnings);
  m->fingerprint_ = fingerprint;
  m->tokenizer_ = Tokenizer::create(m->config_.tokenizer, m->vocab_, paths.config, paths.dir);
  return m;
}

std::shared_ptr<const Model> Model::random(int vocab_size, int embedding_dim, int hidden_size, int num_layers,
                                           uint64_t seed, CellType cell) {
  if (vocab_size < 1 || vocab_size > kMaxVocabSize || embedding_dim < 0 || embedding_dim > kMaxLayerWidth ||
      hidden_size < 1 || hidden_size > kMaxLayerWidth || num_layers < 1 || num_layers > kMaxLayerCount)
    throw UsageError("random model: shape V,E,H,L needs V in [1, " + std::to_string(kMaxVocabSize) +
                     "], E in [0, " + std::to_string(kMaxLayerWidth) + "], H in [1, " +
                     std::to_string(kMaxLayerWidth) + "], L in [1, " + std::to_string(kMaxLayerCount) + "]");
  ModelConfig c;
  c.vocab_size = vocab_size;
  c.embedding_dim = embedding_dim;
  for (int k = 0; k < num_layers; ++k) {
    LayerConfig l;
    l.cell = cell;
    l.hidden_size = hidden_size;
    c.layers.push_back(l);
  }
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
    const int g = c.layers[size_t(k)].gate_count() * hidden_size;
    lw.w_ih.resize(g, c.layer_input_size(static_cast<size_t>(k)));
    lw.w_hh.resize(g, hidden_size);
    lw.bias.resize(g);
    fill(lw.w_ih, u);
    fill(lw.w_hh, u);
    fill(lw.bias, u);
    if (cell == CellType::Gru) {  // reset_after, PyTorch's nn.GRU: its own recurrent bias
      lw.bias_hh.resize(g);
      fill(lw.bias_hh, u);
    }
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

int64_t Model::parameter_count() const { return parameter_count_; }

size_t Model::memory_bytes() const {
  std::lock_guard<std::mutex> lock(matrix_mu_);
  size_t n = sizeof(float) * static_cast<size_t>(weights_.embedding.size() + weights_.decoder.size() +
                                                 weights_.decoder_bias.size());
  for (const auto& l : weights_.layers) n += sizeof(float) * static_cast<size_t>(layer_floats(l));
  for (const auto& d : weights_.head)
    n += sizeof(float) * static_cast<size_t>(d.weight.size() + d.bias.size());
  return n;
}

std::shared_ptr<const void> Model::derived(const std::string& key,
                                           const std::function<std::shared_ptr<const void>()>& make,
                                           bool from_weights) const {
  std::lock_guard<std::mutex> lock(derived_mu_);
  auto it = derived_.find(key);
  if (it == derived_.end()) {
    if (from_weights && released_ && !file_) throw UsageError(released_why_);
    it = derived_.emplace(key, make()).first;
  }
  return it->second;
}

void Model::release_layer_weights(std::string why, std::optional<size_t> layer) {
  if (file_) {  // only copies of what the file holds: the rest (biases) is what packing still reads
    for (const auto& [key, f] : in_file_)
      if (!layer || key.second == *layer) slot(static_cast<MatrixKind>(key.first), key.second) = MatrixRM();
  } else if (layer) {
    if (*layer < weights_.layers.size()) weights_.layers[*layer] = LayerWeights{};
  } else {
    for (auto& l : weights_.layers) l = LayerWeights{};
    weights_.decoder = MatrixRM();  // untied; a tied output is the embedding, which the engine reads
  }
  released_why_ = why.empty() ? "the model's float weights were released" : std::move(why);
  released_ = true;
}

const Model::FileMatrix* Model::in_file(MatrixKind kind, size_t layer) const {
  if (kind == MatrixKind::Decoder && config_.tied) kind = MatrixKind::Embedding;
  auto it = in_file_.find({static_cast<int>(kind), layer});
  return it == in_file_.end() ? nullptr : &it->second;
}

MatrixRM& Model::slot(MatrixKind kind, size_t layer) const {
  static MatrixRM none;  // a layer that does not exist: never written (matrix() fills only file matrices)
  switch (kind) {
    case MatrixKind::Embedding:
      return weights_.embedding;
    case MatrixKind::Decoder:
      return config_.tied ? weights_.embedding : weights_.decoder;
    default:
      break;
  }
  if (layer >= weights_.layers.size()) return none;
  LayerWeights& l = weights_.layers[layer];
  return kind == MatrixKind::WeightIh ? l.w_ih : kind == MatrixKind::WeightHh ? l.w_hh : l.w_hr;
}

const MatrixRM& Model::matrix(MatrixKind kind, size_t layer) const {
  std::lock_guard<std::mutex> lock(matrix_mu_);
  MatrixRM& m = slot(kind, layer);
  const FileMatrix* f = in_file(kind, layer);
  if (m.size() == 0 && f && f->rows * f->cols > 0) {
    MatrixRM read(f->rows, f->cols);
    file_->read_f32(f->tensor, read.data());
    m = std::move(read);
  }
  return m;
}

void Model::read_rows(MatrixKind kind, size_t layer, int64_t first, int64_t count, float* out) const {
  const auto [rows, cols] = matrix_shape(kind, layer);
  if (first < 0 || count < 0 || first + count > rows)
    throw std::out_of_range("Model::read_rows: rows [" + std::to_string(first) + ", " +
                            std::to_string(first + count) + ") of " + std::to_string(rows));
  {
    std::lock_guard<std::mutex> lock(matrix_mu_);
    const MatrixRM& m = slot(kind, layer);
    if (m.size() > 0) {
      std::copy(m.data() + first * cols, m.data() + (first + count) * cols, out);
      return;
    }
  }
  // Not held: the file's rows, read outside the lock (pread is safe from any thread).
  if (const FileMatrix* f = in_file(kind, layer))
    file_->read_f32(f->tensor, static_cast<size_t>(first * cols), static_cast<size_t>(count * cols), out);
}

std::pair<int64_t, int64_t> Model::matrix_shape(MatrixKind kind, size_t layer) const {
  if (const FileMatrix* f = in_file(kind, layer)) return {f->rows, f->cols};
  std::lock_guard<std::mutex> lock(matrix_mu_);
  const MatrixRM& m = slot(kind, layer);
  return {m.rows(), m.cols()};
}

const Weights& Model::weights() const {
  for (const auto& [key, f] : in_file_) matrix(static_cast<MatrixKind>(key.first), key.second);
  return weights_;
}

}  // namespace lstmlm
