#include "engine/head.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

namespace lstmlm::engine {

namespace {

float activate(Activation a, float x) {
  switch (a) {
    case Activation::Relu:
      return x > 0.0f ? x : 0.0f;
    case Activation::Tanh:
      return std::tanh(x);
    case Activation::Sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case Activation::Linear:
      break;
  }
  return x;
}

}  // namespace

std::vector<HeadLayer> head_layers(const Model& model) {
  const ModelConfig& c = model.config();
  std::vector<HeadLayer> out;
  for (size_t k = 0; k < c.head.size(); ++k) {
    const DenseWeights& d = model.held_weights().head[k];
    out.push_back(
        {d.weight.data(), d.bias.data(), c.head[k].units, c.head_input_size(k), c.head[k].activation});
  }
  return out;
}

void apply_head(const std::vector<HeadLayer>& head, int rows, const float* const* x, kernels::FloatBuf& buf,
                std::vector<const float*>& out) {
  int widest = 0;
  for (const auto& l : head) widest = std::max(widest, l.units);
  // Two slots per row: layer k reads one and writes the other.
  const size_t slot = static_cast<size_t>(widest);
  if (buf.size() < 2 * slot * static_cast<size_t>(rows)) buf.resize(2 * slot * static_cast<size_t>(rows));
  out.resize(static_cast<size_t>(rows));
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  for (int r = 0; r < rows; ++r) {
    const float* in = x[r];
    float* slots[2] = {buf.data() + 2 * slot * size_t(r), buf.data() + (2 * size_t(r) + 1) * slot};
    for (size_t k = 0; k < head.size(); ++k) {
      const HeadLayer& l = head[k];
      float* y = slots[k % 2];
      Eigen::Map<const Mat> w(l.weight, l.units, l.in);
      Eigen::Map<Eigen::VectorXf> yv(y, l.units);
      yv.noalias() = w * Eigen::Map<const Eigen::VectorXf>(in, l.in);
      for (int j = 0; j < l.units; ++j) y[j] = activate(l.activation, y[j] + l.bias[j]);
      in = y;
    }
    out[size_t(r)] = in;
  }
}

}  // namespace lstmlm::engine
