// Model::load: a model directory (config.json, vocab.json, weights.safetensors) -> Model.
// Names and ranks of tensors are checked here; their dimensions by Model::create's validation,
// whose messages are re-prefixed with the path of the file at fault.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "format/json_util.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/safetensors.hpp"

namespace lstmlm {

namespace {

namespace fs = std::filesystem;

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

class TensorReader {
 public:
  TensorReader(const SafetensorsFile& st, std::vector<std::string>& warnings)
      : st_(st), warnings_(warnings) {}

  const TensorInfo* get(const std::string& name, size_t rank, bool required, const std::string& why) {
    const TensorInfo* t = st_.find(name);
    if (!t) {
      if (required) fail("missing tensor " + format::quoted(name) + " (" + why + ")");
      return nullptr;
    }
    used_.insert(name);
    if (t->shape.size() != rank)
      fail("tensor " + format::quoted(name) + " has shape " + shape_str(t->shape) + ", expected " +
           std::to_string(rank) + " dimension" + (rank == 1 ? "" : "s"));
    return t;
  }

  MatrixRM matrix(const std::string& name, const std::string& why) {
    const TensorInfo* t = get(name, 2, true, why);
    MatrixRM m(t->shape[0], t->shape[1]);
    copy(*t, m.data());
    return m;
  }

  // Adds the tensor into `acc` (bias_ih + bias_hh); returns false when it is absent.
  bool add_vector(const std::string& name, Eigen::VectorXf& acc) {
    const TensorInfo* t = get(name, 1, false, "");
    if (!t) return false;
    Eigen::VectorXf v(t->shape[0]);
    copy(*t, v.data());
    if (acc.size() == 0)
      acc = v;
    else if (acc.size() == v.size())
      acc += v;
    else
      fail("tensor " + format::quoted(name) + " has shape " + shape_str(t->shape) +
           ", its partner bias has [" + std::to_string(acc.size()) + "]");
    return true;
  }

  void reject_present(const std::string& name, const std::string& why) {
    if (st_.find(name)) fail("tensor " + format::quoted(name) + " must be absent: " + why);
  }

  void reject_unknown() {
    for (const auto& t : st_.tensors())
      if (!used_.count(t.name))
        fail("unknown tensor " + format::quoted(t.name) +
             " (not a format v1 tensor name for this config.json)");
  }

  [[noreturn]] void fail(const std::string& what) const { throw ModelError(st_.path() + ": " + what); }

 private:
  // Straight into the Eigen storage (no intermediate buffer: fresh pages are the main cost of a load).
  void copy(const TensorInfo& t, float* dst) {
    st_.read_f32(t, dst);
    const float* v = dst;
    size_t n = SafetensorsFile::element_count(t), bad = 0, first = 0;
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite(v[i]) && bad++ == 0) first = i;
    if (bad)
      warnings_.push_back(st_.path() + ": tensor " + format::quoted(t.name) + " holds " +
                          std::to_string(bad) + " non-finite value" + (bad == 1 ? "" : "s") +
                          " (first at flat index " + std::to_string(first) + ": " +
                          (std::isnan(v[first]) ? "nan" : "inf") + ")");
  }

  const SafetensorsFile& st_;
  std::vector<std::string>& warnings_;
  std::set<std::string> used_;
};

// Model::create and the Tokenizer name files by their bare names; give the full path instead.
[[noreturn]] void rethrow_with_path(const ModelError& e, const fs::path& dir) {
  std::string m = e.what();
  const std::pair<const char*, const char*> prefixes[] = {{"weights: ", "weights.safetensors"},
                                                          {"config: ", "config.json"},
                                                          {"config.json: ", "config.json"},
                                                          {"vocab.json: ", "vocab.json"}};
  for (auto [prefix, file] : prefixes)
    if (m.rfind(prefix, 0) == 0)
      throw ModelError((dir / file).string() + ": " + m.substr(std::strlen(prefix)));
  throw ModelError(dir.string() + ": " + m);
}

}  // namespace

std::shared_ptr<const Model> Model::load(const std::string& dir) {
  fs::path d(dir);
  std::error_code ec;
  if (!fs::is_directory(d, ec))
    throw ModelError(
        dir + ": not a model directory (expected config.json, vocab.json and weights.safetensors in it)");
  std::string vocab_path = (d / "vocab.json").string();

  ModelConfig config = load_config((d / "config.json").string());
  Vocab vocab = Vocab::load(vocab_path);
  if (vocab.size() != config.vocab_size)
    throw ModelError(vocab_path + ": " + std::to_string(vocab.size()) +
                     " tokens, but config.json vocab_size is " + std::to_string(config.vocab_size));
  std::vector<std::string> warnings;
  {
    // A duplicate token cannot be looked up by its second id; worth knowing, not fatal.
    std::set<std::string_view> seen;
    size_t dups = 0;
    std::string first;
    for (const auto& t : vocab.tokens())
      if (!seen.insert(t).second && dups++ == 0) first = t;
    if (dups)
      warnings.push_back(vocab_path + ": " + std::to_string(dups) + " duplicate token" +
                         (dups == 1 ? "" : "s") + " (first " + format::quoted(first) +
                         "); text maps to the lowest id");
  }

  SafetensorsFile st = SafetensorsFile::open((d / "weights.safetensors").string());
  TensorReader r(st, warnings);
  Weights w;
  if (config.embedding_dim > 0)
    w.embedding = r.matrix("embedding.weight", "config.json embedding_dim > 0");
  else
    r.reject_present("embedding.weight", "config.json embedding_dim is 0 (one-hot input)");
  for (size_t k = 0; k < config.layers.size(); ++k) {
    std::string sfx = "_l" + std::to_string(k);
    std::string why = "config.json layers[" + std::to_string(k) + "]";
    LayerWeights lw;
    lw.w_ih = r.matrix("lstm.weight_ih" + sfx, why);
    lw.w_hh = r.matrix("lstm.weight_hh" + sfx, why);
    bool has_ih = r.add_vector("lstm.bias_ih" + sfx, lw.bias);
    bool has_hh = r.add_vector("lstm.bias_hh" + sfx, lw.bias);
    // A model without any bias is almost surely a mis-export; refuse rather than run with zeros.
    if (!has_ih && !has_hh)
      r.fail("missing tensor 'lstm.bias_ih" + sfx + "' or 'lstm.bias_hh" + sfx + "' (" + why +
             " needs at least one)");
    if (config.layers[k].proj_size > 0)
      lw.w_hr = r.matrix("lstm.weight_hr" + sfx, why + " proj_size > 0");
    else
      r.reject_present("lstm.weight_hr" + sfx, why + " has proj_size 0");
    w.layers.push_back(std::move(lw));
  }
  if (config.tied)
    r.reject_present("decoder.weight", "config.json output.tied is true (the decoder is embedding.weight)");
  else
    w.decoder = r.matrix("decoder.weight", "config.json output.tied is false");
  r.get("decoder.bias", 1, true, "the output layer's bias");
  r.add_vector("decoder.bias", w.decoder_bias);
  r.reject_unknown();

  try {
    return build(std::move(config), std::move(vocab), std::move(w), dir, std::move(warnings));
  } catch (const ModelError& e) {
    rethrow_with_path(e, d);
  }
}

}  // namespace lstmlm
