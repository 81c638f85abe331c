// Model::load: a model directory (config.json, vocab.json, weights.safetensors) -> Model.
// Names and ranks of tensors are checked here; their dimensions by the validation Model::create
// shares, which is given the paths of the files to name in its errors.
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "format/foreign.hpp"
#include "format/json_util.hpp"
#include "format/tensor_names.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/safetensors.hpp"
#include "model/checks.hpp"

namespace lstmlm {

namespace {

namespace fs = std::filesystem;
namespace names = format::tensor_names;

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

class TensorReader {
 public:
  TensorReader(const SafetensorsFile& st, std::vector<std::string>& warnings,
               std::map<std::string, std::vector<double>>& f64, Model::FileMatrices& in_file)
      : st_(st), warnings_(warnings), f64_(f64), in_file_(in_file) {}

  const TensorInfo* get(const std::string& name, size_t rank, bool required, const std::string& why) {
    const TensorInfo* t = st_.find(name);
    if (!t) {
      if (required) fail(name, "missing tensor " + format::quoted(name) + " (" + why + ")");
      return nullptr;
    }
    used_.insert(name);
    if (t->shape.size() != rank)
      fail(name, "tensor " + format::quoted(name) + " has shape " + shape_str(t->shape) + ", expected " +
                     std::to_string(rank) + " dimension" + (rank == 1 ? "" : "s"));
    return t;
  }

  MatrixRM matrix(const std::string& name, const std::string& why) {
    const TensorInfo* t = get(name, 2, true, why);
    MatrixRM m(t->shape[0], t->shape[1]);
    copy(*t, m.data());
    return m;
  }

  // A big matrix left in the file (Model::read_rows reads it a block of rows at a time): checked for
  // non-finite values a block at a time, so the load holds none of it. An F64 tensor is read whole (the
  // double-precision path keeps its values).
  MatrixRM matrix_in_file(const std::string& name, const std::string& why, MatrixKind kind,
                          size_t layer = 0) {
    const TensorInfo* t = get(name, 2, true, why);
    if (t->dtype == DType::F64) return matrix(name, why);
    const size_t n = SafetensorsFile::element_count(*t);
    std::vector<float> block(std::min<size_t>(n, size_t{1} << 18));
    Scan scan;
    for (size_t i = 0; i < n; i += block.size()) {
      const size_t m = std::min(block.size(), n - i);
      st_.read_f32(*t, i, m, block.data());
      scan.add(block.data(), m, i);
    }
    scan.warn(warnings_, st_.path(), t->name);
    in_file_[{static_cast<int>(kind), layer}] = {*t, t->shape[0], t->shape[1]};
    return MatrixRM();
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
      fail(name, "tensor " + format::quoted(name) + " has shape " + shape_str(t->shape) +
                     ", its partner bias has [" + std::to_string(acc.size()) + "]");
    return true;
  }

  void reject_present(const std::string& name, const std::string& why) {
    if (st_.find(name)) fail(name, "tensor " + format::quoted(name) + " must be absent: " + why);
  }

  void reject_unknown() {
    for (const auto& t : st_.tensors())
      if (!used_.count(t.name))
        fail(t.name,
             "unknown tensor " + format::quoted(t.name) + " (not a tensor of this config.json's layers)");
  }

  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    throw ModelError::about(st_.path(), tensor, what);
  }

 private:
  // Straight into the Eigen storage (no intermediate buffer: fresh pages are the main cost of a load).
  void copy(const TensorInfo& t, float* dst) {
    st_.read_f32(t, dst);
    if (t.dtype == DType::F64) {
      auto& d = f64_[t.name];
      d.resize(SafetensorsFile::element_count(t));
      st_.read_f64(t, d.data());
    }
    Scan scan;
    scan.add(dst, SafetensorsFile::element_count(t), 0);
    scan.warn(warnings_, st_.path(), t.name);
  }

  // The non-finite values of a tensor, counted a block at a time.
  struct Scan {
    size_t bad = 0, first = 0;
    bool first_nan = false;
    void add(const float* v, size_t n, size_t at) {
      for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(v[i]) && bad++ == 0) {
          first = at + i;
          first_nan = std::isnan(v[i]);
        }
    }
    void warn(std::vector<std::string>& warnings, const std::string& path, const std::string& name) const {
      if (bad)
        warnings.push_back(path + ": tensor " + format::quoted(name) + " holds " + std::to_string(bad) +
                           " non-finite value" + (bad == 1 ? "" : "s") + " (first at flat index " +
                           std::to_string(first) + ": " + (first_nan ? "nan" : "inf") + ")");
    }
  };

  const SafetensorsFile& st_;
  std::vector<std::string>& warnings_;
  std::map<std::string, std::vector<double>>& f64_;
  Model::FileMatrices& in_file_;
  std::set<std::string> used_;
};

// "<path>: this is a Keras HDF5 file, not an lstmlm model directory: convert it with ..."
[[noreturn]] void refuse_foreign(const std::string& path, const format::ForeignModel& f) {
  std::string what = "this is " + f.what + ", not an lstmlm model directory: ";
  if (f.convertible) throw ModelError(path, what + "convert it with `lstmlm-convert " + path + " OUTDIR`");
  throw ModelError(path, what + f.format +
                             " models are not supported yet (lstmlm-convert reads Keras .h5/.keras, PyTorch "
                             ".pt/.pth, TF1 checkpoints, ONNX, TF.js, TF2 SavedModels and ml5 dumps)");
}

// A directory without config.json that holds a framework's model file (a downloaded Keras project, say):
// name the file and what to do with it. At most 256 entries are looked at.
void refuse_dir_of_foreign(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "config.json", ec)) return;
  fs::directory_iterator it(dir, ec), end;
  for (int n = 0; !ec && it != end && n < 256; it.increment(ec), ++n) {
    const std::string p = it->path().string();
    if (auto f = format::identify_foreign_model(p)) {
      std::string hint = f->convertible ? "convert it with `lstmlm-convert " + p + " OUTDIR`"
                                        : f->format + " models are not supported yet";
      throw ModelError(dir, "not an lstmlm model directory (no config.json), but it holds " + p + ", " +
                                f->what + ": " + hint);
    }
  }
}

// One recurrent layer's tensors, named by its cell (format v3: gru.weight_ih_l0; an LSTM's keep their v1
// names).
LayerWeights read_layer(TensorReader& r, const LayerConfig& lc, size_t k) {
  const std::string_view cell = to_string(lc.cell);
  const std::string why = "config.json layers[" + std::to_string(k) + "]";
  LayerWeights lw;
  lw.w_ih = r.matrix_in_file(names::weight_ih(k, cell), why, MatrixKind::WeightIh, k);
  lw.w_hh = r.matrix_in_file(names::weight_hh(k, cell), why, MatrixKind::WeightHh, k);
  // A GRU with reset_after keeps b_hh apart (r multiplies W_hn h + b_hn); every other cell adds the two.
  const bool split = lc.cell == CellType::Gru && lc.reset_after;
  const bool has_ih = r.add_vector(names::bias_ih(k, cell), lw.bias);
  const bool has_hh = r.add_vector(names::bias_hh(k, cell), split ? lw.bias_hh : lw.bias);
  // A model without any bias is almost surely a mis-export; refuse rather than run with zeros.
  if (!has_ih && !has_hh)
    r.fail(names::bias_ih(k, cell), "missing tensor " + format::quoted(names::bias_ih(k, cell)) + " or " +
                                        format::quoted(names::bias_hh(k, cell)) + " (" + why +
                                        " needs at least one)");
  if (split) {  // the absent one of the pair is zero
    const Eigen::Index g = Eigen::Index(lc.gate_count()) * lc.hidden_size;  // W_hh's rows (left in the file)
    if (!has_ih) lw.bias = Eigen::VectorXf::Zero(g);
    if (!has_hh) lw.bias_hh = Eigen::VectorXf::Zero(g);
  }
  if (lc.proj_size > 0)
    lw.w_hr = r.matrix_in_file(names::weight_hr(k, cell), why + " proj_size > 0", MatrixKind::WeightHr, k);
  else
    r.reject_present(names::weight_hr(k, cell), why + " has proj_size 0");
  const std::pair<std::string, Eigen::VectorXf*> peepholes[] = {{names::weight_ci(k, cell), &lw.w_ci},
                                                                {names::weight_cf(k, cell), &lw.w_cf},
                                                                {names::weight_co(k, cell), &lw.w_co}};
  for (const auto& [name, v] : peepholes) {
    if (!lc.peepholes) {
      r.reject_present(name, why + " has no peepholes");
      continue;
    }
    r.get(name, 1, true, why + " peepholes");
    r.add_vector(name, *v);
  }
  return lw;
}

// Format v5's tensors; their shapes against the config are checked by model::check_v5_weights, the table
// of direct connections' before it is allocated.
void read_v5(TensorReader& r, const ModelConfig& c, Weights& w) {
  if (c.classes > 0) {
    const std::string why = "config.json output.classes";
    w.class_weight = r.matrix(names::class_weight(), why);
    r.get(names::class_bias(), 1, true, why);
    r.add_vector(names::class_bias(), w.class_bias);
    const TensorInfo* t = r.get(names::word_class(), 1, true, why);
    if (t->shape[0] != c.vocab_size)
      r.fail(t->name, "tensor 'class.word_class' has shape " + shape_str(t->shape) + ", expected [" +
                          std::to_string(c.vocab_size) + "]");
    Eigen::VectorXf ids;
    r.add_vector(t->name, ids);
    w.word_class.resize(size_t(ids.size()));
    for (Eigen::Index i = 0; i < ids.size(); ++i) {
      const float f = ids[i];
      if (!(f >= 0.0f && f < float(c.classes)) || f != std::floor(f))
        r.fail(t->name, "tensor 'class.word_class': word " + std::to_string(i) + " has class " +
                            format::brief(f) + ", not an integer in [0, " + std::to_string(c.classes) +
                            ") (output.classes)");
      w.word_class[size_t(i)] = static_cast<int32_t>(f);
    }
  }
  if (c.direct_size > 0) {
    const TensorInfo* t = r.get(names::direct_weight(), 1, true, "config.json output.direct");
    if (t->shape[0] != c.direct_size)
      r.fail(t->name, "tensor 'direct.weight' has shape " + shape_str(t->shape) + ", expected [" +
                          std::to_string(c.direct_size) + "] (output.direct.size)");
    r.add_vector(t->name, w.direct);
  }
  for (size_t k = 0; k < c.layers.size(); ++k) {
    Eigen::VectorXf h;
    if (r.add_vector(names::initial_h(k), h)) w.initial_h.push_back(std::move(h));
  }
}

}  // namespace

ModelPaths ModelPaths::in(const std::string& dir) {
  fs::path d(dir);
  return {dir, (d / "config.json").string(), (d / "vocab.json").string(),
          (d / "weights.safetensors").string()};
}

std::shared_ptr<const Model> Model::load(const std::string& dir) {
  if (auto foreign = format::identify_foreign_model(dir)) refuse_foreign(dir, *foreign);
  std::error_code ec;
  if (!fs::is_directory(fs::path(dir), ec)) {
    // One of a model directory's own files given for the directory (`-m model/config.json`).
    const fs::path p(dir);
    const std::string file = p.filename().string();
    if (fs::is_regular_file(p, ec) &&
        (file == "config.json" || file == "vocab.json" || file == "weights.safetensors")) {
      const std::string parent = p.has_parent_path() ? p.parent_path().string() : std::string(".");
      throw ModelError(dir, "give the model's directory (" + parent + "), not its " + file);
    }
    throw ModelError(
        dir, "not a model directory (expected config.json, vocab.json and weights.safetensors in it)");
  }
  refuse_dir_of_foreign(dir);
  if (fs::is_empty(fs::path(dir), ec) && !ec)
    throw ModelError(
        dir, "an empty directory, not a model: convert a model into it with `lstmlm-convert SOURCE " + dir +
                 "` (`python3 -m lstmlm.convert` from a build tree; docs/importing.md)");
  const ModelPaths paths = ModelPaths::in(dir);
  // A folder of other files (none of a model's three): say what a model directory is, as for a missing path,
  // not "config.json: cannot open". A model missing one of its files is named by that file below.
  auto absent = [&](const std::string& f) { return !fs::exists(fs::symlink_status(fs::path(f), ec)); };
  if (absent(paths.config) && absent(paths.vocab) && absent(paths.weights))
    throw ModelError(
        dir,
        "not a model directory: no config.json in it (a model directory holds config.json, vocab.json "
        "and weights.safetensors; convert a model into one with `lstmlm-convert SOURCE OUTDIR`)");

  ModelConfig config = load_config(paths.config);
  Vocab vocab = Vocab::load(paths.vocab);
  model::check_vocab_size(config, vocab, paths);
  std::vector<std::string> warnings;
  {
    // A duplicate token cannot be looked up by its second id; worth knowing, not fatal.
    std::set<std::string_view> seen;
    size_t dups = 0;
    std::string first;
    for (const auto& t : vocab.tokens())
      if (!seen.insert(t).second && dups++ == 0) first = t;
    if (dups)
      warnings.push_back(paths.vocab + ": " + std::to_string(dups) + " duplicate token" +
                         (dups == 1 ? "" : "s") + " (first " + format::quoted(first) +
                         "); text maps to the lowest id");
  }

  auto st = std::make_shared<const SafetensorsFile>(SafetensorsFile::open(paths.weights));
  Weights w;
  Model::FileMatrices in_file;
  TensorReader r(*st, warnings, w.f64, in_file);
  if (config.embedding_dim > 0)
    w.embedding =
        r.matrix_in_file(names::embedding(), "config.json embedding_dim > 0", MatrixKind::Embedding);
  else
    r.reject_present(names::embedding(), "config.json embedding_dim is 0 (one-hot input)");
  for (size_t k = 0; k < config.layers.size(); ++k) w.layers.push_back(read_layer(r, config.layers[k], k));
  for (size_t k = 0; k < config.head.size(); ++k) {
    const std::string why = "config.json output.head[" + std::to_string(k) + "]";
    DenseWeights d;
    d.weight = r.matrix(names::head_weight(k), why);
    r.get(names::head_bias(k), 1, true, why + "'s bias");
    r.add_vector(names::head_bias(k), d.bias);
    w.head.push_back(std::move(d));
  }
  if (config.tied)
    r.reject_present(names::decoder_weight(),
                     "config.json output.tied is true (the decoder is embedding.weight)");
  else
    w.decoder =
        r.matrix_in_file(names::decoder_weight(), "config.json output.tied is false", MatrixKind::Decoder);
  r.get(names::decoder_bias(), 1, true, "the output layer's bias");
  r.add_vector(names::decoder_bias(), w.decoder_bias);
  read_v5(r, config, w);
  r.reject_unknown();

  return build(std::move(config), std::move(vocab), std::move(w), paths, std::move(warnings), std::move(st),
               std::move(in_file));
}

}  // namespace lstmlm
