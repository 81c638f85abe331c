#include "lstmlm/engine.hpp"

namespace lstmlm {

State State::zeros(const Model& model) {
  State s;
  for (const auto& l : model.config().layers) {
    s.h.emplace_back(static_cast<size_t>(l.output_size()), 0.0f);
    s.c.emplace_back(static_cast<size_t>(l.memory_size()), 0.0f);
  }
  return s;
}

}  // namespace lstmlm
