// How the generic cells lay out and split a step: the padded width of a row, and the units of each part
// of a team.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/aligned.hpp"

namespace lstmlm::kernels::cells {

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
