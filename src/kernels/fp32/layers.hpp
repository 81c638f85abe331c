// The fp32 backend's layers (lstm.cpp, linear.cpp), assembled by backend.cpp.
#pragma once
#include <memory>

#include "kernels/backend.hpp"

namespace lstmlm::kernels::fp32 {

std::unique_ptr<RecurrentLayer> make_lstm(const LstmWeights& w);
std::unique_ptr<OutputLayer> make_linear(const float* w, int rows, int cols, const float* bias);

}  // namespace lstmlm::kernels::fp32
