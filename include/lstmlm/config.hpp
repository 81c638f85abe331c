// Model configuration: the parsed and validated contents of config.json (format v1 and v2,
// docs/model-format.md).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lstmlm {

// The newest format_version this build reads. Version 2 adds what version 1 cannot hold: the LSTM's cell
// activation and an output head of Dense layers; version 3 the cell per layer (GRU, simple RNN) and the
// LSTM's peepholes and projection clip; version 4 the subword tokenizers (SentencePiece, pre-split BPE).
// A model is written in the oldest version that holds it.
// Version 5: a class-factored output, the direct connections, rnnlm's exp, the state a reset starts from.
inline constexpr int kFormatVersion = 5;

// The loader's limits on a model's shape (config.json and Model::random): far above any real LSTM LM but
// low enough that V*H products stay far from overflow and a corrupt file cannot ask for terabytes.
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 28;
inline constexpr int64_t kMaxLayerWidth = int64_t{1} << 16;  // embedding_dim, hidden_size
inline constexpr int64_t kMaxLayerCount = 256;
// config.json's optional input_length (and the tasks' --pad-to / --window): a fixed input window.
inline constexpr int kMaxInputLength = 1000000;
// Sizes of the JSON files, checked before they are read: config.json is a few KB (its free-form `source`
// included); vocab.json holds at most kMaxVocabSize tokens of a few bytes each.
inline constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;
inline constexpr uint64_t kMaxVocabBytes = uint64_t{4} << 30;
// The model files' JSON is a few levels deep; deeper nesting is refused before parsing, because the
// DOM's destructor, dump() and the messages that print a value all recurse once per level.
inline constexpr int kMaxJsonDepth = 64;
// output.direct: the hash table's entries (4 bytes each; rnnlm allocates whatever its header says, 1.6 TB
// on a typo) and the longest n-gram it hashes (rnnlm's MAX_NGRAM_ORDER).
inline constexpr int64_t kMaxDirectSize = 1000000000;
inline constexpr int kMaxDirectOrder = 20;

enum class RecurrentActivation { Sigmoid, HardSigmoid, HardSigmoidKeras3 };
// The LSTM's cell activation (g and h = o act(c); Keras' `activation`) and a head layer's activation.
enum class Activation { Tanh, Relu, Linear, Sigmoid };
// word and char: split here (Keras/PyTorch rules); sentencepiece: a SentencePiece model file in the model
// directory; bpe: pre-split pieces with a continuation marker (subword-nmt, fairseq).
enum class TokenizerType { Word, Char, SentencePiece, Bpe };
// A layer's recurrent cell (format v3; docs/model-format.md gives each one's equations).
enum class CellType { Lstm, Gru, Rnn };
// The exponential of every sigmoid and softmax (format v5 `exp`): exact, or rnnlm 0.3e's approximation
// (Schraudolph's, from the bits of a double) with its clip of the argument to [-50, 50].
enum class ExpKind { Exact, Rnnlm };
// How text outside the vocabulary (and without an unk_token) is fed (format v5 tokenizer.oov_input): not at
// all, or as the zero input vector of a one-hot model (rnnlm's "no word unit"); either way it is not scored.
enum class OovInput { Skip, Zero };

struct LayerConfig {
  int hidden_size = 0;
  int proj_size = 0;  // LSTM: 0 = no projection (LSTMP when > 0)
  // The gates' activation (LSTM, GRU); the simple RNN has none.
  RecurrentActivation recurrent_activation = RecurrentActivation::Sigmoid;
  std::optional<float> cell_clip;            // LSTM: none = no clipping of c
  Activation activation = Activation::Tanh;  // LSTM: of g and c (v2 for any other); GRU: of n; RNN: of h
  CellType cell = CellType::Lstm;
  bool peepholes = false;               // LSTM: i, f see c_prev and o sees c (TF1 use_peepholes)
  std::optional<float> proj_clip = {};  // LSTM with a projection: h clipped to [-clip, clip]
  bool reset_after = true;              // GRU: r multiplies (W_hn h + b_hn), else W_hn (r h)

  // Width of the layer's output h (proj_size when projected, else hidden_size).
  int output_size() const { return proj_size > 0 ? proj_size : hidden_size; }
  // Floats of the cell's memory vector (an LSTM's c), 0 for a cell whose state is h alone.
  int memory_size() const { return cell == CellType::Lstm ? hidden_size : 0; }
  // Row blocks of H in weight_ih, weight_hh and the biases: 4 (LSTM), 3 (GRU), 1 (RNN).
  int gate_count() const;
  // Multiply-adds of one step of this layer for one row, its input `input_size` wide: the gates' input and
  // recurrent products, and the projection's (activations and biases, O(H), left out as frameworks count).
  double multiply_adds(int input_size) const;
};

struct TokenizerConfig {
  TokenizerType type = TokenizerType::Word;
  bool lowercase = false;
  std::string filters;  // UTF-8 characters replaced by `split` before splitting (Keras Tokenizer filters)
  // Word models: the separator of Keras' text_to_word_sequence (`seq.split(split)`, empty pieces dropped),
  // so only it separates words. None: any whitespace, as Python's str.split() (word_language_model).
  std::optional<std::string> split;
  std::optional<std::string> unk_token, eos_token, bos_token;
  std::optional<int32_t> pad_id;
  std::string model_file;           // sentencepiece: the .model file's name inside the model directory
  std::string continuation = "@@";  // bpe: the marker ending a piece the next piece continues
  OovInput oov_input = OovInput::Skip;
  // Format v5: eos stands for the text's line break, as rnnlm reads a newline: a last line without one gets
  // no eos.
  bool eos_is_line_break = false;
  bool subword() const { return type == TokenizerType::SentencePiece || type == TokenizerType::Bpe; }
};

// One Dense layer of the output head (format v2): y = act(W x + b), between the last LSTM layer and the
// decoder (the final Dense, whose softmax is the model's output).
struct DenseConfig {
  int units = 0;
  Activation activation = Activation::Linear;
};

struct ModelConfig {
  int format_version = 1;  // of the file read (a config made in code: 1, config_to_json writes what it needs)
  int vocab_size = 0;
  int embedding_dim = 0;  // 0 = one-hot input
  std::vector<LayerConfig> layers;
  bool tied = false;
  std::vector<DenseConfig> head;  // format v2: Dense layers before the decoder (empty: none)
  TokenizerConfig tokenizer;
  nlohmann::json source = nlohmann::json::object();  // free-form provenance
  // The model's fixed input length (a Keras Input of shape (None, N)): score, predict and generate then
  // pre-pad every context to N by default, as the Keras app does (docs/scoring.md). None: any length.
  std::optional<int> input_length;
  // Format v5. A class-factored output (output.classes C > 0): p(w|h) = p(class(w)|h) p(w|class(w),h), each
  // a softmax, the classes' logits from class.weight, the words' from the decoder over the words of the
  // class.
  int classes = 0;
  // rnnlm's direct connections (output.direct): hashed n-gram weights added to the class and word logits.
  int64_t direct_size = 0;
  int direct_order = 0;
  ExpKind exp = ExpKind::Exact;

  // Whether the model runs on the engine's double-precision path (engine/exact.hpp): a class-factored
  // output, direct connections, rnnlm's exp or a sigmoid simple RNN.
  bool exact_path() const;

  // Width of the input of layer k.
  int layer_input_size(size_t k) const {
    return k == 0 ? (embedding_dim > 0 ? embedding_dim : vocab_size) : layers[k - 1].output_size();
  }
  int last_output_size() const { return layers.back().output_size(); }
  // Width of the decoder's input: the head's last layer, else the last LSTM layer's output.
  int decoder_input_size() const { return head.empty() ? last_output_size() : head.back().units; }
  // Input width of head layer k.
  int head_input_size(size_t k) const { return k == 0 ? last_output_size() : head[k - 1].units; }
  // The oldest format_version that holds this config: 4 with a subword tokenizer, 3 with a GRU, RNN or an
  // LSTM variant, 2 with a cell activation other than tanh or a head, else 1 (so a model stays readable by
  // the oldest builds that can run it).
  int required_format_version() const;
};

// Parses and validates config.json. `file` names the file in error messages.
// Throws ModelError naming the file and the field.
ModelConfig parse_config(const nlohmann::json& j, const std::string& file);
ModelConfig load_config(const std::string& path);
// The rules between the fields of a config (at least one layer; a tied output's widths), written once:
// parse_config applies them, and so does Model::create for a config built in code. Throws ModelError
// naming `file` and the field.
void check_config(const ModelConfig& c, const std::string& file);
nlohmann::json config_to_json(const ModelConfig& c);

const char* to_string(RecurrentActivation a);
const char* to_string(Activation a);
const char* to_string(TokenizerType t);
const char* to_string(CellType t);
const char* to_string(ExpKind e);

// What each kind of cell is, for the code that describes or counts a model (the summary, bench, info): one
// row per CellType (config.cpp), so no other place tests the kind.
struct CellTraits {
  const char* name;        // config.json's "cell": lstm, gru, rnn
  const char* keras_name;  // its layer class in a Keras summary: LSTM, GRU, SimpleRNN
  int gates;               // blocks of H rows in W_ih and W_hh: LSTM 4 (i f g o), GRU 3 (r z n), RNN 1
  int state_vectors;       // vectors of H carried from step to step: LSTM h and c, GRU and RNN h
  bool gated;              // has gates, so a recurrent (gate) activation
  bool reset_gate;         // has a reset gate, applied before or after the recurrent product (reset_after)
};
const CellTraits& cell_traits(CellType t);

}  // namespace lstmlm
