// config.json (format v1 and v2): every field checked, messages name the file and the field
// (docs/model-format.md).
#include "lstmlm/config.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string_view>

#include "format/json_util.hpp"
#include "format/tensor_names.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm {

namespace {

using nlohmann::json;

// Bounds far above any real LSTM LM but low enough that V*H products stay far from overflow
// and a corrupt file cannot ask for terabytes.
constexpr int64_t kMaxVocab = kMaxVocabSize;
constexpr int64_t kMaxWidth = kMaxLayerWidth;
constexpr int64_t kMaxLayers = kMaxLayerCount;

class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ModelError::in_field(file_, field, what);
  }

  const json& require(const json& obj, const std::string& prefix, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(prefix + key, "required field is missing");
    return *it;
  }

  // Unknown keys are refused: a misspelt optional field would otherwise be silently defaulted.
  void only_keys(const json& obj, const std::string& prefix,
                 std::initializer_list<std::string_view> known) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool ok = false;
      for (auto k : known) ok = ok || it.key() == k;
      if (!ok)
        throw ModelError::about(
            file_, prefix + it.key(),
            "unknown field " + format::quoted(prefix + it.key()) + " (not a field the format defines here)");
    }
  }

  int64_t integer(const json& v, const std::string& field, int64_t lo, int64_t hi, const char* expect) const {
    if (!v.is_number_integer())
      fail(field, std::string("expected ") + expect + ", found " + format::brief(v));
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
      fail(field, std::string("expected ") + expect + " of at most " + std::to_string(hi) + ", found " +
                      format::brief(v));
    int64_t n = v.get<int64_t>();
    if (n < lo) fail(field, std::string("expected ") + expect + ", found " + format::brief(v));
    if (n > hi)
      fail(field, std::string("expected ") + expect + " of at most " + std::to_string(hi) + ", found " +
                      format::brief(v));
    return n;
  }

  std::string string(const json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "expected a string, found " + format::brief(v));
    return v.get<std::string>();
  }

  std::optional<std::string> opt_string(const json& obj, const std::string& prefix, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    std::string s = string(*it, prefix + key);
    if (s.empty()) fail(prefix + key, "expected a token string or null, found \"\"");
    return s;
  }

  bool boolean(const json& v, const std::string& field) const {
    if (!v.is_boolean()) fail(field, "expected true or false, found " + format::brief(v));
    return v.get<bool>();
  }

  const json& object(const json& v, const std::string& field) const {
    if (!v.is_object()) fail(field, "expected an object, found " + format::brief(v));
    return v;
  }

 private:
  std::string file_;
};

Activation parse_activation(const Reader& r, const json& j, const std::string& field) {
  const std::string a = r.string(j, field);
  for (Activation x : {Activation::Tanh, Activation::Relu, Activation::Linear, Activation::Sigmoid})
    if (a == to_string(x)) return x;
  r.fail(field, "expected \"tanh\", \"relu\", \"linear\" or \"sigmoid\", found " + format::brief(j));
}

// output.head (format v2): [{"units": N, "activation": A}, ...].
std::vector<DenseConfig> parse_head(const Reader& r, const json& j) {
  if (!j.is_array()) r.fail("output.head", "expected an array of Dense layers, found " + format::brief(j));
  if (j.size() > static_cast<size_t>(kMaxLayers))
    r.fail("output.head",
           "expected at most " + std::to_string(kMaxLayers) + " layers, found " + std::to_string(j.size()));
  std::vector<DenseConfig> head;
  for (size_t k = 0; k < j.size(); ++k) {
    const std::string p = "output.head[" + std::to_string(k) + "].";
    r.object(j[k], p.substr(0, p.size() - 1));
    r.only_keys(j[k], p, {"units", "activation"});
    DenseConfig d;
    d.units = static_cast<int>(
        r.integer(r.require(j[k], p, "units"), p + "units", 1, kMaxWidth, "a positive integer"));
    d.activation = parse_activation(r, r.require(j[k], p, "activation"), p + "activation");
    head.push_back(d);
  }
  return head;
}

RecurrentActivation parse_recurrent_activation(const Reader& r, const json& j, const std::string& field) {
  const std::string a = r.string(j, field);
  for (RecurrentActivation x : {RecurrentActivation::Sigmoid, RecurrentActivation::HardSigmoid,
                                RecurrentActivation::HardSigmoidKeras3})
    if (a == to_string(x)) return x;
  r.fail(field,
         "expected \"sigmoid\", \"hard_sigmoid\" or \"hard_sigmoid_keras3\", found " + format::brief(a));
}

std::optional<float> parse_clip(const Reader& r, const json& j, const std::string& field) {
  if (j.is_null()) return std::nullopt;
  if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() <= 0)
    r.fail(field, "expected a positive number or null, found " + format::brief(j));
  // The clip runs in float: a number past float's range would be infinity (and its conversion undefined),
  // one below its smallest subnormal 0, which clips every value to 0.
  const double d = j.get<double>();
  if (d > double(std::numeric_limits<float>::max()) || static_cast<float>(d) == 0.0f)
    r.fail(field,
           "expected a positive number a float holds (1e-45 to 3.4e38) or null, found " + format::brief(j));
  return static_cast<float>(d);
}

CellType parse_cell(const Reader& r, const json& j, const std::string& p, int version) {
  auto it = j.find("cell");
  if (it == j.end()) return CellType::Lstm;
  const std::string c = r.string(*it, p + "cell");
  for (CellType x : {CellType::Lstm, CellType::Gru, CellType::Rnn})
    if (c == to_string(x)) {
      if (x != CellType::Lstm && version < 3)
        r.fail(p + "cell", "\"" + c + "\" needs format_version 3 (format_version " + std::to_string(version) +
                               " has LSTM layers only)");
      return x;
    }
  r.fail(p + "cell", "expected \"lstm\", \"gru\" or \"rnn\", found " + format::brief(*it));
}

// A key of format v3 in a file that declares an older version is refused naming it.
void require_v3(const Reader& r, const json& j, const std::string& p, const char* key, int version) {
  if (version < 3 && j.contains(key))
    r.fail(p + key,
           "needs format_version 3 (format_version " + std::to_string(version) + " has no " + key + ")");
}

LayerConfig parse_layer(const Reader& r, const json& j, const std::string& p, int version) {
  r.object(j, p.substr(0, p.size() - 1));
  LayerConfig l;
  l.cell = parse_cell(r, j, p, version);
  switch (l.cell) {
    case CellType::Lstm:
      r.only_keys(j, p,
                  {"cell", "hidden_size", "proj_size", "activation", "recurrent_activation", "cell_clip",
                   "peepholes", "proj_clip"});
      break;
    case CellType::Gru:
    case CellType::Rnn:
      for (const char* key : {"proj_size", "cell_clip", "peepholes", "proj_clip"})
        if (j.contains(key))
          r.fail(p + key,
                 std::string("a ") + to_string(l.cell) + " layer has no " + key + " (an LSTM's field)");
      if (l.cell == CellType::Gru)
        r.only_keys(j, p, {"cell", "hidden_size", "activation", "recurrent_activation", "reset_after"});
      else
        r.only_keys(j, p, {"cell", "hidden_size", "activation"});
      break;
  }
  l.hidden_size = static_cast<int>(
      r.integer(r.require(j, p, "hidden_size"), p + "hidden_size", 1, kMaxWidth, "a positive integer"));
  if (auto it = j.find("proj_size"); it != j.end()) {
    // PyTorch requires 0 < proj_size < hidden_size for LSTMP.
    l.proj_size = static_cast<int>(r.integer(*it, p + "proj_size", 0, l.hidden_size - 1,
                                             "0 (no projection) or an integer below hidden_size"));
  }
  if (auto it = j.find("activation"); it != j.end()) {
    l.activation = parse_activation(r, *it, p + "activation");
    if (l.activation != Activation::Tanh && version < 2)
      r.fail(p + "activation", "\"" + std::string(to_string(l.activation)) +
                                   "\" needs format_version 2 (format_version 1 has \"tanh\" only)");
  }
  if (l.cell == CellType::Lstm)
    l.recurrent_activation =
        parse_recurrent_activation(r, r.require(j, p, "recurrent_activation"), p + "recurrent_activation");
  else if (auto it = j.find("recurrent_activation"); it != j.end())
    l.recurrent_activation = parse_recurrent_activation(r, *it, p + "recurrent_activation");
  if (auto it = j.find("cell_clip"); it != j.end()) l.cell_clip = parse_clip(r, *it, p + "cell_clip");
  require_v3(r, j, p, "peepholes", version);
  require_v3(r, j, p, "proj_clip", version);
  if (auto it = j.find("peepholes"); it != j.end()) l.peepholes = r.boolean(*it, p + "peepholes");
  if (auto it = j.find("proj_clip"); it != j.end()) {
    l.proj_clip = parse_clip(r, *it, p + "proj_clip");
    if (l.proj_clip && l.proj_size == 0) r.fail(p + "proj_clip", "needs a projection (proj_size > 0)");
  }
  if (auto it = j.find("reset_after"); it != j.end()) l.reset_after = r.boolean(*it, p + "reset_after");
  return l;
}

TokenizerConfig parse_tokenizer(const Reader& r, const json& j, int vocab_size, int version) {
  const std::string p = "tokenizer.";
  r.object(j, "tokenizer");
  r.only_keys(j, p,
              {"type", "lowercase", "filters", "split", "unk_token", "eos_token", "bos_token", "pad_id",
               "model", "continuation", "oov_input", "eos_is_line_break"});
  TokenizerConfig t;
  std::string type = r.string(r.require(j, p, "type"), p + "type");
  if (type == "word")
    t.type = TokenizerType::Word;
  else if (type == "char")
    t.type = TokenizerType::Char;
  else if (type == "sentencepiece")
    t.type = TokenizerType::SentencePiece;
  else if (type == "bpe")
    t.type = TokenizerType::Bpe;
  else
    r.fail(p + "type",
           "expected \"word\", \"char\", \"sentencepiece\" or \"bpe\", found " + format::brief(type));
  if (t.subword() && version < 4)
    r.fail(p + "type", "\"" + type + "\" needs format_version 4 (format_version " + std::to_string(version) +
                           " has word and char tokenizers only)");
  auto only_for = [&](const char* key, TokenizerType kind) {
    if (j.contains(key) && t.type != kind)
      r.fail(p + key,
             std::string("applies to ") + to_string(kind) + " tokenizers only (type is \"" + type + "\")");
  };
  only_for("model", TokenizerType::SentencePiece);
  only_for("continuation", TokenizerType::Bpe);
  if (t.type == TokenizerType::SentencePiece) {
    // A plain file name: the tokenizer reads nothing outside the model directory.
    t.model_file = r.string(r.require(j, p, "model"), p + "model");
    const auto& m = t.model_file;
    if (m.empty() || m == "." || m == ".." || m.find_first_of(std::string("/\\\0", 3)) != std::string::npos)
      r.fail(p + "model", "expected a file name inside the model directory, found " + format::brief(m));
  }
  if (auto it = j.find("continuation"); it != j.end()) {
    t.continuation = r.string(*it, p + "continuation");
    if (t.continuation.empty()) r.fail(p + "continuation", "expected a non-empty string, found \"\"");
  }
  if (t.subword())
    for (const char* key : {"filters", "split"})
      if (auto it = j.find(key);
          it != j.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
        r.fail(p + key, "applies to word and char tokenizers only (type is \"" + type + "\")");
  if (auto it = j.find("lowercase"); it != j.end()) t.lowercase = r.boolean(*it, p + "lowercase");
  if (auto it = j.find("filters"); it != j.end() && !it->is_null()) t.filters = r.string(*it, p + "filters");
  if (auto it = j.find("split"); it != j.end() && !it->is_null()) {
    // Python's str.split("") raises, so Keras never splits on nothing; a char model never splits.
    t.split = r.string(*it, p + "split");
    if (t.split->empty()) r.fail(p + "split", "expected a non-empty string or null, found \"\"");
    if (t.type != TokenizerType::Word)
      r.fail(p + "split", "applies to word models only (type is \"" + type + "\")");
  }
  t.unk_token = r.opt_string(j, p, "unk_token");
  t.eos_token = r.opt_string(j, p, "eos_token");
  t.bos_token = r.opt_string(j, p, "bos_token");
  if (auto it = j.find("oov_input"); it != j.end()) {
    if (version < 5) r.fail(p + "oov_input", "needs format_version 5");
    const std::string v = r.string(*it, p + "oov_input");
    if (v != "skip" && v != "zero")
      r.fail(p + "oov_input", "expected \"skip\" or \"zero\", found " + format::brief(v));
    t.oov_input = v == "zero" ? OovInput::Zero : OovInput::Skip;
  }
  if (auto it = j.find("eos_is_line_break"); it != j.end()) {
    if (version < 5) r.fail(p + "eos_is_line_break", "needs format_version 5");
    t.eos_is_line_break = r.boolean(*it, p + "eos_is_line_break");
  }
  if (auto it = j.find("pad_id"); it != j.end() && !it->is_null())
    t.pad_id = static_cast<int32_t>(
        r.integer(*it, p + "pad_id", 0, vocab_size - 1, "a token id in [0, vocab_size)"));
  return t;
}

// The `source.trainable` convention (docs/model-format.md): an object of booleans keyed by layer name.
void check_trainable(const Reader& r, const json& source, const std::vector<LayerConfig>& layers,
                     size_t heads) {
  auto it = source.find("trainable");
  if (it == source.end()) return;
  r.object(*it, "source.trainable");
  for (auto e = it->begin(); e != it->end(); ++e) {
    const std::string& k = e.key();
    bool known = k == "embedding" || k == "decoder";
    for (size_t i = 0; i < layers.size() && !known; ++i)
      known = k == std::string(to_string(layers[i].cell)) + "_l" + std::to_string(i);
    for (size_t i = 0; i < heads && !known; ++i) known = k == "head_" + std::to_string(i);
    if (!known)
      r.fail("source.trainable." + k,
             "unknown layer name (expected embedding, " + std::string(to_string(layers[0].cell)) + "_l0.." +
                 to_string(layers.back().cell) + "_l" + std::to_string(layers.size() - 1) + " or decoder)");
    r.boolean(e.value(), "source.trainable." + k);
  }
}

// Format v5's output kinds: output.classes, output.direct {size, order} and the top-level exp.
void parse_v5_output(const Reader& r, const json& j, const json& out, ModelConfig& c) {
  auto v5 = [&](const std::string& field) {
    if (c.format_version < 5) r.fail(field, "needs format_version 5");
  };
  if (auto it = out.find("classes"); it != out.end()) {
    v5("output.classes");
    c.classes = static_cast<int>(
        r.integer(*it, "output.classes", 1, c.vocab_size, "a number of classes in [1, vocab_size]"));
  }
  if (auto it = out.find("direct"); it != out.end()) {
    v5("output.direct");
    r.object(*it, "output.direct");
    r.only_keys(*it, "output.direct.", {"size", "order"});
    // Bounded before anything is allocated: the loader reads a table of this many floats.
    c.direct_size = r.integer(r.require(*it, "output.direct.", "size"), "output.direct.size", 1,
                              kMaxDirectSize, "a positive number of hash entries");
    c.direct_order =
        static_cast<int>(r.integer(r.require(*it, "output.direct.", "order"), "output.direct.order", 1,
                                   kMaxDirectOrder, "an n-gram order"));
    if (c.classes == 0) r.fail("output.direct", "needs a class-factored output (output.classes)");
    if (c.direct_size < 2 * int64_t{c.classes})
      r.fail("output.direct.size", "expected at least twice output.classes (" +
                                       std::to_string(2 * c.classes) + "), found " +
                                       std::to_string(c.direct_size));
  }
  if (auto it = j.find("exp"); it != j.end()) {
    v5("exp");
    const std::string e = r.string(*it, "exp");
    if (e != "exact" && e != "rnnlm")
      r.fail("exp", "expected \"exact\" or \"rnnlm\", found " + format::brief(*it));
    c.exp = e == "rnnlm" ? ExpKind::Rnnlm : ExpKind::Exact;
  }
}

}  // namespace

ModelConfig parse_config(const json& j, const std::string& file) {
  Reader r(file);
  if (!j.is_object()) throw ModelError(file, "expected a JSON object, found " + format::brief(j));
  // The version is read first: a newer file may differ in every other field.
  const json& fmt = r.require(j, "", "format");
  if (!fmt.is_string() || fmt.get<std::string>() != "lstmlm")
    r.fail("format", "expected \"lstmlm\", found " + format::brief(fmt));
  const json& ver = r.require(j, "", "format_version");
  // Compared as unsigned so that a huge version reads as newer, not as a wrapped negative number.
  if (!ver.is_number_integer() || (!ver.is_number_unsigned() && ver.get<int64_t>() < 1) ||
      (ver.is_number_unsigned() && ver.get<uint64_t>() == 0))
    r.fail("format_version", "expected a positive integer, found " + format::brief(ver));
  if (ver.get<uint64_t>() > static_cast<uint64_t>(kFormatVersion))
    throw ModelError::about(file, "format_version",
                            "format_version " + ver.dump() + " is newer than this build reads (" +
                                std::to_string(kFormatVersion) + "); upgrade lstmlm");
  r.only_keys(j, "",
              {"format", "format_version", "vocab_size", "embedding_dim", "layers", "output", "tokenizer",
               "source", "input_length", "exp"});

  ModelConfig c;
  c.format_version = static_cast<int>(ver.get<int64_t>());
  c.vocab_size = static_cast<int>(
      r.integer(r.require(j, "", "vocab_size"), "vocab_size", 1, kMaxVocab, "a positive integer"));
  c.embedding_dim = static_cast<int>(r.integer(r.require(j, "", "embedding_dim"), "embedding_dim", 0,
                                               kMaxWidth, "0 (one-hot input) or a positive integer"));
  const json& layers = r.require(j, "", "layers");
  if (!layers.is_array())
    r.fail("layers", "expected a non-empty array of layers, found " + format::brief(layers));
  if (layers.size() > static_cast<size_t>(kMaxLayers))
    r.fail("layers", "expected at most " + std::to_string(kMaxLayers) + " layers, found " +
                         std::to_string(layers.size()));
  for (size_t k = 0; k < layers.size(); ++k)
    c.layers.push_back(parse_layer(r, layers[k], "layers[" + std::to_string(k) + "].", c.format_version));

  const json& out = r.object(r.require(j, "", "output"), "output");
  r.only_keys(out, "output.", {"tied", "head", "classes", "direct"});
  c.tied = r.boolean(r.require(out, "output.", "tied"), "output.tied");
  parse_v5_output(r, j, out, c);
  if (auto it = out.find("head"); it != out.end()) {
    if (c.format_version < 2) r.fail("output.head", "needs format_version 2 (format_version 1 has no head)");
    c.head = parse_head(r, *it);
  }
  check_config(c, file);  // the rules between fields, shared with Model::create

  c.tokenizer = parse_tokenizer(r, r.require(j, "", "tokenizer"), c.vocab_size, c.format_version);
  // Optional (absent or null: the model takes any length): a Keras model's fixed input time dimension.
  if (auto it = j.find("input_length"); it != j.end() && !it->is_null())
    c.input_length = static_cast<int>(r.integer(*it, "input_length", 1, kMaxInputLength,
                                                "a positive integer (the model's fixed input length)"));
  if (auto it = j.find("source"); it != j.end()) {
    c.source = r.object(*it, "source");
    check_trainable(r, c.source, c.layers, c.head.size());
  }
  return c;
}

void check_config(const ModelConfig& c, const std::string& file) {
  if (c.layers.empty()) throw ModelError::in_field(file, "layers", "expected at least one layer, found none");
  for (size_t k = 0; k < c.layers.size(); ++k) {
    const LayerConfig& l = c.layers[k];
    const std::string p = "layers[" + std::to_string(k) + "].";
    // parse_layer's bounds, for a config built in code: the generic LSTM sizes its buffers by them.
    if (l.proj_size < 0 || (l.proj_size > 0 && l.proj_size >= l.hidden_size))
      throw ModelError::in_field(file, p + "proj_size",
                                 "expected 0 (no projection) or an integer below hidden_size (" +
                                     std::to_string(l.hidden_size) + "), found " +
                                     std::to_string(l.proj_size));
    if (l.cell != CellType::Lstm && (l.proj_size > 0 || l.peepholes || l.cell_clip || l.proj_clip))
      throw ModelError::in_field(
          file, p + "cell",
          std::string("a ") + to_string(l.cell) + " layer has no projection, peepholes or clip (LSTM only)");
    if (l.proj_clip && l.proj_size == 0)
      throw ModelError::in_field(file, p + "proj_clip", "needs a projection (proj_size > 0)");
    if (l.cell == CellType::Rnn && l.activation != Activation::Tanh && l.activation != Activation::Relu &&
        l.activation != Activation::Sigmoid)
      throw ModelError::in_field(
          file, p + "activation",
          std::string("a simple RNN's activation is \"tanh\", \"relu\" or \"sigmoid\", found \"") +
              to_string(l.activation) + "\"");
    if (l.cell == CellType::Rnn && l.activation == Activation::Sigmoid && c.format_version < 5 &&
        c.format_version != 1)
      throw ModelError::in_field(file, p + "activation", "a simple RNN's \"sigmoid\" needs format_version 5");
  }
  if (c.tied && c.embedding_dim == 0)
    throw ModelError::in_field(file, "output.tied", "a tied output needs an embedding (embedding_dim > 0)");
  if (c.tied && c.embedding_dim != c.decoder_input_size())
    throw ModelError::in_field(
        file, "output.tied",
        "a tied output needs embedding_dim (" + std::to_string(c.embedding_dim) + ") equal to the " +
            (c.head.empty() ? "last layer's output size (" : "last head layer's units (") +
            std::to_string(c.decoder_input_size()) + ")");
}

namespace {

// A layer's keys: an LSTM without peepholes or a projection clip exactly as format v1/v2 write it.
json layer_to_json(const LayerConfig& l) {
  auto clip = [](const std::optional<float>& v) { return v ? json(*v) : json(nullptr); };
  switch (l.cell) {
    case CellType::Gru:
      return {{"cell", "gru"},
              {"hidden_size", l.hidden_size},
              {"reset_after", l.reset_after},
              {"activation", to_string(l.activation)},
              {"recurrent_activation", to_string(l.recurrent_activation)}};
    case CellType::Rnn:
      return {{"cell", "rnn"}, {"hidden_size", l.hidden_size}, {"activation", to_string(l.activation)}};
    case CellType::Lstm:
      break;
  }
  json j = {{"hidden_size", l.hidden_size},
            {"proj_size", l.proj_size},
            {"activation", to_string(l.activation)},
            {"recurrent_activation", to_string(l.recurrent_activation)},
            {"cell_clip", clip(l.cell_clip)}};
  if (l.peepholes) j["peepholes"] = true;
  if (l.proj_clip) j["proj_clip"] = *l.proj_clip;
  return j;
}

}  // namespace

ModelConfig load_config(const std::string& path) {
  return parse_config(format::parse_json(format::read_file(path, kMaxConfigBytes), path), path);
}

json config_to_json(const ModelConfig& c) {
  json layers = json::array();
  for (const auto& l : c.layers) layers.push_back(layer_to_json(l));
  auto opt = [](const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); };
  const auto& t = c.tokenizer;
  json tok = {{"type", to_string(t.type)},
              {"lowercase", t.lowercase},
              {"filters", t.filters},
              {"unk_token", opt(t.unk_token)},
              {"eos_token", opt(t.eos_token)},
              {"bos_token", opt(t.bos_token)},
              {"pad_id", t.pad_id ? json(*t.pad_id) : json(nullptr)}};
  // Written only when set: a model without it stays readable by builds that predate the field.
  if (t.split) tok["split"] = *t.split;
  if (t.type == TokenizerType::SentencePiece) tok["model"] = t.model_file;
  if (t.type == TokenizerType::Bpe) tok["continuation"] = t.continuation;
  // A config made in code says version 1; what it holds decides (a model is written in the oldest version
  // that holds it).
  const int version = std::max(c.format_version, c.required_format_version());
  json j = {{"format", "lstmlm"},         {"format_version", version},
            {"vocab_size", c.vocab_size}, {"embedding_dim", c.embedding_dim},
            {"layers", layers},           {"output", {{"tied", c.tied}}},
            {"tokenizer", tok},           {"source", c.source}};
  if (c.input_length) j["input_length"] = *c.input_length;
  if (c.classes > 0) j["output"]["classes"] = c.classes;
  if (c.direct_size > 0) j["output"]["direct"] = {{"size", c.direct_size}, {"order", c.direct_order}};
  if (c.exp != ExpKind::Exact) j["exp"] = to_string(c.exp);
  if (t.oov_input == OovInput::Zero) j["tokenizer"]["oov_input"] = "zero";
  if (t.eos_is_line_break) j["tokenizer"]["eos_is_line_break"] = true;
  if (!c.head.empty()) {
    json head = json::array();
    for (const auto& d : c.head)
      head.push_back({{"units", d.units}, {"activation", to_string(d.activation)}});
    j["output"]["head"] = head;
  }
  return j;
}

int ModelConfig::required_format_version() const {
  bool v2 = !head.empty(), v3 = false;
  for (const auto& l : layers) {
    v2 = v2 || l.activation != Activation::Tanh;
    v3 = v3 || l.cell != CellType::Lstm || l.peepholes || l.proj_clip;
  }
  bool v5 = classes > 0 || direct_size > 0 || exp != ExpKind::Exact ||
            tokenizer.oov_input != OovInput::Skip || tokenizer.eos_is_line_break;
  for (const auto& l : layers) v5 = v5 || (l.cell == CellType::Rnn && l.activation == Activation::Sigmoid);
  if (v5) return 5;
  if (tokenizer.subword()) return 4;
  return v3 ? 3 : v2 ? 2 : 1;
}

int LayerConfig::gate_count() const { return cell_traits(cell).gates; }

double LayerConfig::multiply_adds(int input_size) const {
  double m = double(gate_count()) * hidden_size * (double(input_size) + output_size());
  if (proj_size > 0) m += double(proj_size) * hidden_size;
  return m;
}

const CellTraits& cell_traits(CellType t) {
  static const CellTraits lstm{"lstm", "LSTM", format::kLstmGateCount, 2, true, false};
  static const CellTraits gru{"gru", "GRU", format::kGruGateCount, 1, true, true};
  static const CellTraits rnn{"rnn", "SimpleRNN", format::kRnnGateCount, 1, false, false};
  switch (t) {
    case CellType::Gru:
      return gru;
    case CellType::Rnn:
      return rnn;
    case CellType::Lstm:
      break;
  }
  return lstm;
}

const char* to_string(RecurrentActivation a) {
  switch (a) {
    case RecurrentActivation::Sigmoid:
      return "sigmoid";
    case RecurrentActivation::HardSigmoid:
      return "hard_sigmoid";
    case RecurrentActivation::HardSigmoidKeras3:
      return "hard_sigmoid_keras3";
  }
  return "?";
}

const char* to_string(Activation a) {
  switch (a) {
    case Activation::Tanh:
      return "tanh";
    case Activation::Relu:
      return "relu";
    case Activation::Linear:
      return "linear";
    case Activation::Sigmoid:
      return "sigmoid";
  }
  return "?";
}

const char* to_string(CellType t) { return cell_traits(t).name; }

const char* to_string(ExpKind e) { return e == ExpKind::Rnnlm ? "rnnlm" : "exact"; }

bool ModelConfig::exact_path() const {
  bool sigmoid_rnn = false;
  for (const auto& l : layers)
    sigmoid_rnn = sigmoid_rnn || (l.cell == CellType::Rnn && l.activation == Activation::Sigmoid);
  return classes > 0 || direct_size > 0 || exp != ExpKind::Exact || sigmoid_rnn;
}

const char* to_string(TokenizerType t) {
  switch (t) {
    case TokenizerType::Word:
      return "word";
    case TokenizerType::Char:
      return "char";
    case TokenizerType::SentencePiece:
      return "sentencepiece";
    case TokenizerType::Bpe:
      return "bpe";
  }
  return "?";
}

}  // namespace lstmlm
