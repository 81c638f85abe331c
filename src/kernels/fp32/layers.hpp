// The fp32 backend's layers (lstm.cpp, linear.cpp) over one ISA's kernels, assembled by backend.cpp.
#pragma once
#include <memory>

#include "kernels/backend.hpp"
#include "kernels/fp32/kernels.hpp"

namespace lstmlm::kernels::fp32 {

std::unique_ptr<RecurrentLayer> make_lstm(const LstmWeights& w, const Kernels& k);
std::unique_ptr<OutputLayer> make_linear(const Rows& w, int rows, int cols, const float* bias,
                                         const Kernels& k);

}  // namespace lstmlm::kernels::fp32
