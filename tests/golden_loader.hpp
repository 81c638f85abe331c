// Reads the golden model directories written by tools/make_golden.py (F32 safetensors, the config subset
// the engine needs) without depending on the library's own loader, so the engine's golden tests check the
// math alone. The loader itself is tested by the format tests.
#pragma once
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "lstmlm/model.hpp"

namespace lstmlm::test {

inline std::string slurp_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::map<std::string, MatrixRM> read_f32_safetensors(const std::filesystem::path& p) {
  std::string bytes = slurp_file(p);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  const char* data = bytes.data() + 8 + n;
  std::map<std::string, MatrixRM> out;
  for (auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    auto shape = t["shape"].get<std::vector<int64_t>>();
    auto off = t["data_offsets"].get<std::vector<uint64_t>>();
    MatrixRM m(shape[0], shape.size() > 1 ? shape[1] : 1);
    std::memcpy(m.data(), data + off[0], off[1] - off[0]);
    out[name] = std::move(m);
  }
  return out;
}

inline std::shared_ptr<const Model> load_golden_model(const std::filesystem::path& dir) {
  auto j = nlohmann::json::parse(slurp_file(dir / "config.json"));
  ModelConfig c;
  c.vocab_size = j["vocab_size"];
  c.embedding_dim = j["embedding_dim"];
  c.tied = j["output"]["tied"];
  static const std::map<std::string, RecurrentActivation> acts = {
      {"sigmoid", RecurrentActivation::Sigmoid},
      {"hard_sigmoid", RecurrentActivation::HardSigmoid},
      {"hard_sigmoid_keras3", RecurrentActivation::HardSigmoidKeras3}};
  for (auto& l : j["layers"]) {
    LayerConfig lc;
    lc.hidden_size = l["hidden_size"];
    lc.proj_size = l["proj_size"];
    lc.recurrent_activation = acts.at(l["recurrent_activation"].get<std::string>());
    if (!l["cell_clip"].is_null()) lc.cell_clip = l["cell_clip"].get<float>();
    c.layers.push_back(lc);
  }
  auto t = read_f32_safetensors(dir / "weights.safetensors");
  auto vec = [](const MatrixRM& m) {
    return Eigen::VectorXf(Eigen::Map<const Eigen::VectorXf>(m.data(), m.size()));
  };
  Weights w;
  if (c.embedding_dim > 0) w.embedding = t.at("embedding.weight");
  for (size_t k = 0; k < c.layers.size(); ++k) {
    std::string s = "_l" + std::to_string(k);
    LayerWeights lw;
    lw.w_ih = t.at("lstm.weight_ih" + s);
    lw.w_hh = t.at("lstm.weight_hh" + s);
    lw.bias = vec(t.at("lstm.bias_ih" + s)) + vec(t.at("lstm.bias_hh" + s));
    if (c.layers[k].proj_size > 0) lw.w_hr = t.at("lstm.weight_hr" + s);
    w.layers.push_back(std::move(lw));
  }
  if (!c.tied) w.decoder = t.at("decoder.weight");
  w.decoder_bias = vec(t.at("decoder.bias"));
  auto vocab = nlohmann::json::parse(slurp_file(dir / "vocab.json")).get<std::vector<std::string>>();
  return Model::create(std::move(c), Vocab(std::move(vocab)), std::move(w));
}

}  // namespace lstmlm::test
