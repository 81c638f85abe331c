#include "reference_lstm.hpp"

#include <algorithm>
#include <cmath>

namespace lstmlm::test {

RefState to_ref(const State& s) {
  RefState r;
  for (const auto& v : s.h) r.h.emplace_back(v.begin(), v.end());
  for (const auto& v : s.c) r.c.emplace_back(v.begin(), v.end());
  return r;
}

namespace {
double activate(RecurrentActivation a, double x) {
  switch (a) {
    case RecurrentActivation::HardSigmoid:
      return std::clamp(0.2 * x + 0.5, 0.0, 1.0);
    case RecurrentActivation::HardSigmoidKeras3:
      return std::clamp(x / 6.0 + 0.5, 0.0, 1.0);
    default:
      return 1.0 / (1.0 + std::exp(-x));
  }
}

// Keras' activations by name: tanh, relu = max(x, 0), linear = x, sigmoid.
double activate(Activation a, double x) {
  switch (a) {
    case Activation::Relu:
      return std::max(x, 0.0);
    case Activation::Linear:
      return x;
    case Activation::Sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Activation::Tanh:
      break;
  }
  return std::tanh(x);
}
}  // namespace

std::vector<double> reference_input(const Model& model, int32_t token) {
  const auto& cfg = model.config();
  if (cfg.embedding_dim == 0) {
    std::vector<double> x(static_cast<size_t>(cfg.vocab_size), 0.0);
    if (token < cfg.vocab_size) x[static_cast<size_t>(token)] = 1.0;  // token V: the zero input vector
    return x;
  }
  std::vector<double> x(static_cast<size_t>(cfg.embedding_dim));
  for (int e = 0; e < cfg.embedding_dim; ++e) x[static_cast<size_t>(e)] = model.weights().embedding(token, e);
  return x;
}

void reference_step(const Model& model, size_t k, const std::vector<double>& x, RefState& s) {
  const LayerConfig& lc = model.config().layers[k];
  const LayerWeights& w = model.weights().layers[k];
  const int H = lc.hidden_size;
  std::vector<double> gates(static_cast<size_t>(4 * H));
  for (int r = 0; r < 4 * H; ++r) {
    double a = w.bias(r);
    for (Eigen::Index j = 0; j < w.w_ih.cols(); ++j) a += w.w_ih(r, j) * x[static_cast<size_t>(j)];
    for (Eigen::Index j = 0; j < w.w_hh.cols(); ++j) a += w.w_hh(r, j) * s.h[k][static_cast<size_t>(j)];
    gates[static_cast<size_t>(r)] = a;
  }
  std::vector<double> m(static_cast<size_t>(H));
  for (int u = 0; u < H; ++u) {
    auto g = [&](int q) { return gates[static_cast<size_t>(q * H + u)]; };
    double i = activate(lc.recurrent_activation, g(0)), f = activate(lc.recurrent_activation, g(1));
    double gg = activate(lc.activation, g(2)), o = activate(lc.recurrent_activation, g(3));
    double c = f * s.c[k][static_cast<size_t>(u)] + i * gg;
    if (lc.cell_clip) c = std::clamp(c, -double(*lc.cell_clip), double(*lc.cell_clip));
    s.c[k][static_cast<size_t>(u)] = c;
    m[static_cast<size_t>(u)] = o * activate(lc.activation, c);
  }
  if (lc.proj_size > 0) {
    for (int p = 0; p < lc.proj_size; ++p) {
      double a = 0;
      for (int u = 0; u < H; ++u) a += w.w_hr(p, u) * m[static_cast<size_t>(u)];
      s.h[k][static_cast<size_t>(p)] = a;
    }
  } else {
    s.h[k] = m;
  }
}

std::vector<double> reference_logprobs(const Model& model, const std::vector<double>& h_last) {
  const auto& W = model.weights();
  // The head's Dense layers (format v2), then the decoder.
  std::vector<double> h = h_last;
  for (size_t k = 0; k < W.head.size(); ++k) {
    const auto& d = W.head[k];
    std::vector<double> y(static_cast<size_t>(d.weight.rows()));
    for (Eigen::Index u = 0; u < d.weight.rows(); ++u) {
      double a = d.bias(u);
      for (Eigen::Index j = 0; j < d.weight.cols(); ++j) a += d.weight(u, j) * h[static_cast<size_t>(j)];
      y[static_cast<size_t>(u)] = activate(model.config().head[k].activation, a);
    }
    h = std::move(y);
  }
  const int V = model.vocab_size();
  std::vector<double> z(static_cast<size_t>(V));
  double mx = -INFINITY;
  for (int v = 0; v < V; ++v) {
    double a = W.decoder_bias(v);
    for (size_t j = 0; j < h.size(); ++j) a += W.decoder(v, static_cast<Eigen::Index>(j)) * h[j];
    z[static_cast<size_t>(v)] = a;
    mx = std::max(mx, a);
  }
  double sum = 0;
  for (double a : z) sum += std::exp(a - mx);
  double lse = mx + std::log(sum);
  for (double& a : z) a -= lse;
  return z;
}

std::vector<std::vector<double>> reference_forward(const Model& model, const std::vector<int32_t>& tokens,
                                                   RefState& s) {
  std::vector<std::vector<double>> out;
  for (int32_t t : tokens) {
    std::vector<double> x = reference_input(model, t);
    for (size_t k = 0; k < model.config().layers.size(); ++k) {
      reference_step(model, k, x, s);
      x = s.h[k];
    }
    out.push_back(reference_logprobs(model, x));
  }
  return out;
}

}  // namespace lstmlm::test
