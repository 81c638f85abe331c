// Test helper: the three files of a model directory held in memory, so a test can break any byte of
// them and write the result out. Raw safetensors bytes are built here, not by the library's writer,
// so broken headers can be expressed.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lstmlm/config.hpp"
#include "lstmlm/model.hpp"
#include "test_util.hpp"

namespace lstmlm::test {

// 8-byte little-endian header length, the header text, then the data bytes.
inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string s(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i));
  return s + header + data;
}

inline std::string f32_bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// F32 tensors laid out back to back in the given order.
inline std::string safetensors_of(const std::vector<Tensor>& ts) {
  nlohmann::json h = nlohmann::json::object();
  std::string data;
  for (const auto& t : ts) {
    uint64_t b = data.size();
    data += f32_bytes(t.values);
    h[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {b, data.size()}}};
  }
  return safetensors_bytes(h.dump(), data);
}

// Deterministic small values (exactly representable) so round trips compare bitwise.
inline std::vector<float> ramp(size_t n, float scale = 1.0f / 64) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i % 37) - 18) * scale;
  return v;
}

struct ModelFiles {
  nlohmann::json config;
  std::string vocab;            // raw text of vocab.json
  std::string weights;          // raw bytes of weights.safetensors
  std::vector<Tensor> tensors;  // what `weights` was built from (tests may edit and rebuild)
  bool write_config = true, write_vocab = true, write_weights = true;
  std::string config_text;  // when set, written instead of `config`

  void rebuild_weights() { weights = safetensors_of(tensors); }

  void write(const std::filesystem::path& dir) const {
    std::filesystem::create_directories(dir);
    auto put = [&](const char* name, const std::string& s) {
      std::ofstream(dir / name, std::ios::binary) << s;
    };
    if (write_config) put("config.json", config_text.empty() ? config.dump(2) : config_text);
    if (write_vocab) put("vocab.json", vocab);
    if (write_weights) put("weights.safetensors", weights);
  }
};

// The files of `model`, in the layout of tools/lstmlm_format (bias stored as bias_ih only).
inline ModelFiles files_of(const Model& model) {
  ModelFiles f;
  f.config = config_to_json(model.config());
  f.vocab = nlohmann::json(model.vocab().tokens()).dump();
  const Weights& w = model.weights();
  auto mat = [](const std::string& n, const MatrixRM& m) {
    return Tensor{n, {m.rows(), m.cols()}, std::vector<float>(m.data(), m.data() + m.size())};
  };
  auto vec = [](const std::string& n, const Eigen::VectorXf& v) {
    return Tensor{n, {v.size()}, std::vector<float>(v.data(), v.data() + v.size())};
  };
  if (w.embedding.size()) f.tensors.push_back(mat("embedding.weight", w.embedding));
  for (size_t k = 0; k < w.layers.size(); ++k) {
    // Spelt out, not from the generated table: a change of the spec that breaks files fails the tests.
    const std::string cell = to_string(model.config().layers[k].cell), s = "_l" + std::to_string(k);
    const LayerWeights& lw = w.layers[k];
    f.tensors.push_back(mat(cell + ".weight_ih" + s, lw.w_ih));
    f.tensors.push_back(mat(cell + ".weight_hh" + s, lw.w_hh));
    f.tensors.push_back(vec(cell + ".bias_ih" + s, lw.bias));
    if (lw.bias_hh.size()) f.tensors.push_back(vec(cell + ".bias_hh" + s, lw.bias_hh));
    if (lw.w_hr.size()) f.tensors.push_back(mat(cell + ".weight_hr" + s, lw.w_hr));
    if (lw.w_ci.size()) {
      f.tensors.push_back(vec(cell + ".weight_ci" + s, lw.w_ci));
      f.tensors.push_back(vec(cell + ".weight_cf" + s, lw.w_cf));
      f.tensors.push_back(vec(cell + ".weight_co" + s, lw.w_co));
    }
  }
  if (!model.config().tied) f.tensors.push_back(mat("decoder.weight", w.decoder));
  f.tensors.push_back(vec("decoder.bias", w.decoder_bias));
  f.rebuild_weights();
  return f;
}

}  // namespace lstmlm::test
