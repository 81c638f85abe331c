// The element-wise part of the generic cells: activations on one float, the zero row of a reset state,
// and how a step's units are split among the parts of a team.
#pragma once
#include <algorithm>
#include <cmath>

#include "kernels/aligned.hpp"
#include "lstmlm/config.hpp"

namespace lstmlm::kernels::cells {

inline float activate(RecurrentActivation a, float x) {
  switch (a) {
    case RecurrentActivation::HardSigmoid:
      return std::clamp(0.2f * x + 0.5f, 0.0f, 1.0f);
    case RecurrentActivation::HardSigmoidKeras3:
      return std::clamp(x / 6.0f + 0.5f, 0.0f, 1.0f);
    case RecurrentActivation::Sigmoid:
      break;
  }
  return 1.0f / (1.0f + std::exp(-x));
}

inline float activate(Activation a, float x) {
  switch (a) {
    case Activation::Relu:
      return std::max(x, 0.0f);
    case Activation::Linear:
      return x;
    case Activation::Sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case Activation::Tanh:
      break;
  }
  return std::tanh(x);
}

// Units [begin, end) of part `part` of `parts`: contiguous, a pure function of its arguments.
struct Units {
  int begin, end;
};
inline Units part_units(int n, int part, int parts) {
  return {static_cast<int>(int64_t{n} * part / parts), static_cast<int>(int64_t{n} * (part + 1) / parts)};
}

// Floats per row of a vector of n floats as the cells lay rows out (a linear's stride is at most this).
inline int padded(int n) { return round_up(std::max(n, 1), 64); }

}  // namespace lstmlm::kernels::cells
