// Naive reference LSTM LM (plain loops over the canonical PyTorch-layout weights, float64 throughout).
// Test code, never in the library: the independent implementation the fused kernels are checked against.
#pragma once
#include <cstdint>
#include <vector>

#include "lstmlm/engine.hpp"

namespace lstmlm::test {

struct RefState {
  std::vector<std::vector<double>> h, c;  // per layer
};
RefState to_ref(const State& s);

// One step of layer k: x is the layer input (the token's embedding row, or a one-hot for embedding_dim 0).
void reference_step(const Model& model, size_t k, const std::vector<double>& x, RefState& s);
// Input of layer 0 for a token (a one-hot model's token V: the zero vector, a Keras pad).
std::vector<double> reference_input(const Model& model, int32_t token);
// ln softmax(decoder head(h) + b) over the whole vocabulary (head: the Dense layers of a v2 model).
std::vector<double> reference_logprobs(const Model& model, const std::vector<double>& h_last);

// Runs tokens from `s`, returning the full log-softmax after every token; s is advanced.
std::vector<std::vector<double>> reference_forward(const Model& model, const std::vector<int32_t>& tokens,
                                                   RefState& s);

}  // namespace lstmlm::test
