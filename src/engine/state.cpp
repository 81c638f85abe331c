#include "format/tensor_names.hpp"
#include "lstmlm/engine.hpp"

namespace lstmlm {

namespace {

// The tensor state.h_l{k} (src/format/tensor_names.json).
std::string format_initial_h(size_t k) { return format::tensor_names::initial_h(k); }

}  // namespace

State State::zeros(const Model& model) {
  State s;
  const auto& init = model.held_weights().initial_h;  // format v5: the state a reset starts from
  const auto& layers = model.config().layers;
  for (size_t k = 0; k < layers.size(); ++k) {
    const auto& l = layers[k];
    if (init.size() == layers.size())
      s.h.emplace_back(init[k].data(), init[k].data() + init[k].size());
    else
      s.h.emplace_back(static_cast<size_t>(l.output_size()), 0.0f);
    s.c.emplace_back(static_cast<size_t>(l.memory_size()), 0.0f);
  }
  if (model.config().exact_path()) {
    const auto& f64 = model.held_weights().f64;
    for (size_t k = 0; k < s.h.size(); ++k) {
      auto it = f64.find(format_initial_h(k));
      if (it != f64.end() && it->second.size() == s.h[k].size())
        s.h64.push_back(it->second);
      else
        s.h64.emplace_back(s.h[k].begin(), s.h[k].end());
    }
    for (const auto& c : s.c) s.c64.emplace_back(c.begin(), c.end());
    s.history.assign(static_cast<size_t>(model.config().direct_order), 0);
  }
  return s;
}

}  // namespace lstmlm
