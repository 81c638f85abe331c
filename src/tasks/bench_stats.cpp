// The row math of the bench task: nominal FLOPs, percentiles, and what the rows say about the machine.
#include <algorithm>
#include <cmath>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/bench.hpp"

namespace lstmlm::tasks::bench {

const char* to_string(Workload w) {
  switch (w) {
    case Workload::Score:
      return "score";
    case Workload::Predict:
      return "predict";
    case Workload::Generate:
      return "generate";
    case Workload::Startup:
      return "startup";
  }
  return "?";
}

Workload parse_workload(const std::string& s) {
  for (Workload w : {Workload::Score, Workload::Predict, Workload::Generate, Workload::Startup})
    if (s == to_string(w)) return w;
  throw UsageError("bench: unknown workload '" + s + "', expected score, predict, generate or startup");
}

double flops_per_call(const ModelConfig& c, Workload w, int batch, int length) {
  // Per token: each layer's multiply-adds (LayerConfig::multiply_adds; one multiply-add = 2 FLOPs).
  // Activations and the softmax are O(H) and O(V), left out as frameworks' nominal counts do.
  double lstm = 0;
  for (size_t k = 0; k < c.layers.size(); ++k) lstm += 2.0 * c.layers[k].multiply_adds(c.layer_input_size(k));
  double proj = 2.0 * c.decoder_input_size() * c.vocab_size;
  for (size_t k = 0; k < c.head.size(); ++k) proj += 2.0 * c.head_input_size(k) * c.head[k].units;
  double tokens = static_cast<double>(batch) * length;
  switch (w) {
    case Workload::Score:
    case Workload::Generate:
      return tokens * (lstm + proj);
    case Workload::Predict:
    case Workload::Startup:
      return tokens * lstm + batch * proj;
  }
  return 0;
}

double percentile(std::vector<double> sample, double p) {
  if (sample.empty()) throw UsageError("bench: percentile of an empty sample");
  std::sort(sample.begin(), sample.end());
  double pos = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sample.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sample.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sample[lo] + (sample[hi] - sample[lo]) * frac;
}

std::string build_kind() {
#ifdef LSTMLM_BUILD_KIND
  return LSTMLM_BUILD_KIND;
#else
  return "unknown";
#endif
}

std::string shape_string(const ModelConfig& c) {
  std::string s = "V=" + std::to_string(c.vocab_size) + " E=" + std::to_string(c.embedding_dim) + " H=";
  bool uniform = std::all_of(c.layers.begin(), c.layers.end(), [&](const LayerConfig& l) {
    return l.hidden_size == c.layers[0].hidden_size && l.proj_size == c.layers[0].proj_size &&
           l.cell == c.layers[0].cell;
  });
  auto width = [](const LayerConfig& l) {
    return std::to_string(l.hidden_size) + (l.proj_size > 0 ? "/P" + std::to_string(l.proj_size) : "");
  };
  // An LSTM layer is its width alone (the shapes bench has always printed); another cell is named.
  auto cell = [](const LayerConfig& l) {
    return l.cell == LayerConfig{}.cell ? std::string() : std::string(" ") + to_string(l.cell);
  };
  if (uniform) return s + width(c.layers[0]) + "x" + std::to_string(c.layers.size()) + cell(c.layers[0]);
  for (size_t k = 0; k < c.layers.size(); ++k) {
    if (k) s += ',';
    s += width(c.layers[k]) + cell(c.layers[k]);
  }
  return s;
}

}  // namespace lstmlm::tasks::bench
