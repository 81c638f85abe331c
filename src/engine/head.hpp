// The output head of a format v2 model: Dense layers y = act(W x + b) between the last LSTM layer and the
// decoder, in fp32 at every precision (they are small next to the decoder). Each row is computed alone,
// in one fixed order, so a row's result does not depend on the batch it is in.
#pragma once
#include <vector>

#include "kernels/aligned.hpp"
#include "lstmlm/model.hpp"

namespace lstmlm::engine {

struct HeadLayer {
  const float* weight = nullptr;  // [units, in] row-major, owned by the Model
  const float* bias = nullptr;    // [units]
  int units = 0, in = 0;
  Activation activation = Activation::Linear;
};

std::vector<HeadLayer> head_layers(const Model& model);

// out[r] = the head applied to x[r], for r < rows; the rows live in `buf` (grown as needed) until the
// next call.
void apply_head(const std::vector<HeadLayer>& head, int rows, const float* const* x, kernels::FloatBuf& buf,
                std::vector<const float*>& out);

}  // namespace lstmlm::engine
