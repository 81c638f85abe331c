// The immutable model: configuration, vocabulary, tokenizer and the weights in the canonical (PyTorch)
// layout. One Model is shared by every thread; all per-sequence state lives in the caller's State.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lstmlm/config.hpp"
#include "lstmlm/safetensors.hpp"
#include "lstmlm/tokenizer.hpp"
#include "lstmlm/vocab.hpp"

namespace lstmlm {

using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Exactly the tensors of weights.safetensors, PyTorch layout, in the cell's gate order (LSTM i f g o, GRU
// r z n, RNN h): G = 4, 3 or 1 blocks of H rows.
struct LayerWeights {
  MatrixRM w_ih;         // [G H, in]
  MatrixRM w_hh;         // [G H, out] (out = P when projected, else H)
  Eigen::VectorXf bias;  // [G H] = bias_ih + bias_hh; a GRU with reset_after: bias_ih alone
  MatrixRM w_hr;         // [P, H], empty when proj_size == 0
  // A GRU with reset_after: bias_hh [3H], added to W_hh h before the reset gate multiplies it. Else empty.
  Eigen::VectorXf bias_hh{};
  Eigen::VectorXf w_ci{}, w_cf{}, w_co{};  // an LSTM's peepholes [H] each, empty without
};

// A Dense layer of the output head (format v2).
struct DenseWeights {
  MatrixRM weight;       // [units, in]
  Eigen::VectorXf bias;  // [units]
};

struct Weights {
  MatrixRM embedding;  // [V, E], empty when embedding_dim == 0
  std::vector<LayerWeights> layers;
  std::vector<DenseWeights> head;  // one per config head layer
  MatrixRM decoder;              // [V, decoder_input_size]; empty when the output is tied (Model::decoder())
  Eigen::VectorXf decoder_bias;  // [V]
  // Format v5 (docs/model-format.md), empty when the config has none of them.
  MatrixRM class_weight;                   // [C, decoder_input_size]: a class-factored output's class logits
  Eigen::VectorXf class_bias;              // [C]
  std::vector<int32_t> word_class;         // [V] each word's class; a class's words are contiguous ids
  Eigen::VectorXf direct;                  // [output.direct.size] the direct connections' hash table
  std::vector<Eigen::VectorXf> initial_h;  // per layer [output size]: the state a reset starts from
  // The tensors stored as F64, by name: their values before the rounding to float above. The
  // double-precision path reads them (a converter writes F64 what its source holds in more than float's
  // digits, e.g. rnnlm's text files); every other path reads the floats.
  std::map<std::string, std::vector<double>> f64;
};

// The big matrices of a model by their place. Model::load leaves them in weights.safetensors (read in row
// blocks when a backend packs them, held in memory only when asked for): a process then holds its packed
// weights and not the floats too.
enum class MatrixKind { Embedding, WeightIh, WeightHh, WeightHr, Decoder };

// The three files of a model as error messages name them: Model::load gives their paths in the
// directory, Model::create (a model built in memory) their bare names.
struct ModelPaths {
  std::string dir;  // "" when there is no directory
  std::string config = "config.json", vocab = "vocab.json", weights = "weights.safetensors";
  static ModelPaths in(const std::string& dir);
};

class Model {
 public:
  // Loads and validates a model directory; throws ModelError naming the file and the field.
  static std::shared_ptr<const Model> load(const std::string& dir);
  // Builds a model from weights in memory (shapes are checked against `config`).
  static std::shared_ptr<const Model> create(ModelConfig config, Vocab vocab, Weights weights);
  // Random weights of a given shape (bench --shape, tests). Vocabulary is "t0".."t{V-1}".
  static std::shared_ptr<const Model> random(int vocab_size, int embedding_dim, int hidden_size,
                                             int num_layers, uint64_t seed, CellType cell = CellType::Lstm);

  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  const Vocab& vocab() const { return vocab_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // Every tensor as floats in memory: the matrices a loaded model left in its file are read on the first
  // call and kept (thread-safe). For what needs all the floats (the double-precision path, tests); the
  // engine packs from read_rows and never calls it.
  const Weights& weights() const;
  // The weights in memory now, read from nowhere: the matrices still in the file are empty here (their
  // shapes: matrix_shape). The small tensors (biases, peepholes, head, format v5's) are always in memory.
  const Weights& held_weights() const { return weights_; }
  // One big matrix in memory, read from the file on first use and kept (thread-safe). The decoder of a
  // tied model is the embedding.
  const MatrixRM& matrix(MatrixKind kind, size_t layer = 0) const;
  // Rows [first, first + count) of that matrix as floats into out[count * cols]: copied from memory, or
  // read from the file without keeping them (thread-safe). What a backend packs from, a block at a time.
  void read_rows(MatrixKind kind, size_t layer, int64_t first, int64_t count, float* out) const;
  // {rows, cols} of the matrix, whether in memory or in the file ({0, 0} when the model has none).
  std::pair<int64_t, int64_t> matrix_shape(MatrixKind kind, size_t layer = 0) const;
  // The output matrix [V, decoder_input_size] in memory: the embedding itself when the output is tied.
  const MatrixRM& decoder() const { return matrix(MatrixKind::Decoder); }
  const std::string& directory() const { return dir_; }
  // 64 bits that tell this model from another (FNV-1a over the config, the vocabulary and a sample of every
  // weight tensor: its size and first and last 64 floats), computed once when the model is built, so it
  // is the same before and after the weights are released. A serialized stream carries it.
  uint64_t fingerprint() const { return fingerprint_; }
  // Non-fatal findings of the loader (e.g. non-finite values in a tensor), one line each.
  const std::vector<std::string>& warnings() const { return warnings_; }

  int32_t vocab_size() const { return config_.vocab_size; }
  int num_layers() const { return static_cast<int>(config_.layers.size()); }
  // Parameters as the source framework counts them (tied output counted once).
  int64_t parameter_count() const;
  // Bytes of the canonical weights held in memory (not those left in the file; the engine's packed copy:
  // lstmlm::packed_bytes in engine.hpp).
  size_t memory_bytes() const;

  // Data that a higher layer derives from the weights once and shares for the model's lifetime (the
  // engine's packed weights, one per backend). The model never reads it. The first call for a key runs
  // `make` (under a lock: concurrent callers wait for it and get the same object).
  // `from_weights` false: data made from the vocabulary alone (word completion's index), which can still be
  // made after the weights are released.
  std::shared_ptr<const void> derived(const std::string& key,
                                      const std::function<std::shared_ptr<const void>()>& make,
                                      bool from_weights = true) const;

  // Frees the float weights of recurrent layer `layer` (of every layer and an untied output matrix when
  // none is given) once a higher layer has derived all it needs from them (engine.hpp: keep_only_packed,
  // which frees each layer as soon as it is packed, so the two copies never coexist): a process that runs
  // one precision then holds its weights once. weights() then has empty matrices there; derived data not
  // made before throws UsageError(`why`), unless the model reads its matrices from its file (a loaded
  // model holds none of them in memory anyway, and packs another precision from the file);
  // parameter_count() is unchanged. Not thread-safe and takes no lock (it may run inside derived()'s
  // `make`): call it before the model is shared.
  void release_layer_weights(std::string why, std::optional<size_t> layer = {});
  bool layer_weights_released() const { return released_; }
  // Whether the big matrices can be read again from the model's file (Model::load), so derived data for
  // another precision can be made after a release.
  bool reads_from_file() const { return file_ != nullptr; }

 public:
  // A matrix Model::load left in the file: its tensor and shape (the loader's; by (kind, layer)).
  struct FileMatrix {
    TensorInfo tensor;
    int64_t rows = 0, cols = 0;
  };
  using FileMatrices = std::map<std::pair<int, size_t>, FileMatrix>;

 private:
  Model(ModelConfig config, Vocab vocab, Weights weights, std::string dir);
  // What create() and load() share once config and vocab are checked: the tensors against the config,
  // the tokenizer against the vocabulary, then the model; `paths` name the files in errors.
  static std::shared_ptr<const Model> build(ModelConfig config, Vocab vocab, Weights weights,
                                            const ModelPaths& paths, std::vector<std::string> warnings,
                                            std::shared_ptr<const SafetensorsFile> file = nullptr,
                                            FileMatrices in_file = {});
  const FileMatrix* in_file(MatrixKind kind, size_t layer) const;
  MatrixRM& slot(MatrixKind kind, size_t layer) const;

  ModelConfig config_;
  Vocab vocab_;
  mutable Weights weights_;  // the matrices still in the file are filled under matrix_mu_ when asked for
  std::shared_ptr<const SafetensorsFile> file_;
  FileMatrices in_file_;
  mutable std::mutex matrix_mu_;
  uint64_t fingerprint_ = 0;
  std::string dir_;
  std::vector<std::string> warnings_;
  std::unique_ptr<const Tokenizer> tokenizer_;
  mutable std::mutex derived_mu_;
  mutable std::map<std::string, std::shared_ptr<const void>, std::less<>> derived_;
  int64_t parameter_count_ = 0;  // counted when built: release_layer_weights() keeps it
  std::string released_why_;
  bool released_ = false;
};

}  // namespace lstmlm
