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

namespace {

// Row r of W x, in double.
double dot_row(const MatrixRM& w, Eigen::Index r, const std::vector<double>& x) {
  double a = 0;
  for (Eigen::Index j = 0; j < w.cols(); ++j) a += w(r, j) * x[static_cast<size_t>(j)];
  return a;
}

// PyTorch's nn.GRU documentation (gate rows r, z, n; b_hn inside r's product):
//   r = s(W_ir x + b_ir + W_hr h + b_hr), z = s(W_iz x + b_iz + W_hz h + b_hz),
//   n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.
// reset_after = false, Keras' GRU before 2.3 (and TF1's GRUCell, ONNX linear_before_reset = 0):
//   n = tanh(W_in x + W_hn (r * h) + b_n), the whole bias outside the product.
void gru_step(const LayerConfig& lc, const LayerWeights& w, const std::vector<double>& x,
              std::vector<double>& h) {
  const int H = lc.hidden_size;
  const size_t n = static_cast<size_t>(H);
  std::vector<double> r(n), z(n), rh(n), out(n);
  for (int u = 0; u < H; ++u) {
    const double bh_r = lc.reset_after ? w.bias_hh(u) : 0.0, bh_z = lc.reset_after ? w.bias_hh(H + u) : 0.0;
    r[size_t(u)] =
        activate(lc.recurrent_activation, dot_row(w.w_ih, u, x) + w.bias(u) + dot_row(w.w_hh, u, h) + bh_r);
    z[size_t(u)] = activate(lc.recurrent_activation,
                            dot_row(w.w_ih, H + u, x) + w.bias(H + u) + dot_row(w.w_hh, H + u, h) + bh_z);
    rh[size_t(u)] = r[size_t(u)] * h[size_t(u)];
  }
  for (int u = 0; u < H; ++u) {
    const double xin = dot_row(w.w_ih, 2 * H + u, x) + w.bias(2 * H + u);
    const double rec = lc.reset_after ? r[size_t(u)] * (dot_row(w.w_hh, 2 * H + u, h) + w.bias_hh(2 * H + u))
                                      : dot_row(w.w_hh, 2 * H + u, rh);
    const double n = activate(lc.activation, xin + rec);
    out[size_t(u)] = (1 - z[size_t(u)]) * n + z[size_t(u)] * h[size_t(u)];
  }
  h = std::move(out);
}

// PyTorch's nn.RNN: h' = act(W_ih x + b_ih + W_hh h + b_hh), act tanh or relu.
void rnn_step(const LayerConfig& lc, const LayerWeights& w, const std::vector<double>& x,
              std::vector<double>& h) {
  std::vector<double> out(h.size());
  for (int u = 0; u < lc.hidden_size; ++u)
    out[size_t(u)] = activate(lc.activation, dot_row(w.w_ih, u, x) + dot_row(w.w_hh, u, h) + w.bias(u));
  h = std::move(out);
}

// PyTorch's nn.LSTM, with TF1's LSTMCell additions: peepholes (i and f see c_prev, o sees the new c),
// cell_clip, proj_clip after the projection.
void lstm_step(const LayerConfig& lc, const LayerWeights& w, const std::vector<double>& x,
               std::vector<double>& h, std::vector<double>& c) {
  const int H = lc.hidden_size;
  std::vector<double> gates(static_cast<size_t>(4 * H));
  for (int r = 0; r < 4 * H; ++r)
    gates[size_t(r)] = w.bias(r) + dot_row(w.w_ih, r, x) + dot_row(w.w_hh, r, h);
  auto peep = [&](const Eigen::VectorXf& p, int u, double cell) { return lc.peepholes ? p(u) * cell : 0.0; };
  std::vector<double> m(static_cast<size_t>(H));
  for (int u = 0; u < H; ++u) {
    auto g = [&](int q) { return gates[static_cast<size_t>(q * H + u)]; };
    const double cp = c[size_t(u)];
    double i = activate(lc.recurrent_activation, g(0) + peep(w.w_ci, u, cp));
    double f = activate(lc.recurrent_activation, g(1) + peep(w.w_cf, u, cp));
    double gg = activate(lc.activation, g(2));
    double cn = f * cp + i * gg;
    if (lc.cell_clip) cn = std::clamp(cn, -double(*lc.cell_clip), double(*lc.cell_clip));
    double o = activate(lc.recurrent_activation, g(3) + peep(w.w_co, u, cn));
    c[size_t(u)] = cn;
    m[static_cast<size_t>(u)] = o * activate(lc.activation, cn);
  }
  if (lc.proj_size > 0) {
    for (int p = 0; p < lc.proj_size; ++p) {
      double a = dot_row(w.w_hr, p, m);
      if (lc.proj_clip) a = std::clamp(a, -double(*lc.proj_clip), double(*lc.proj_clip));
      h[static_cast<size_t>(p)] = a;
    }
  } else {
    h = m;
  }
}

}  // namespace

void reference_step(const Model& model, size_t k, const std::vector<double>& x, RefState& s) {
  const LayerConfig& lc = model.config().layers[k];
  const LayerWeights& w = model.weights().layers[k];
  switch (lc.cell) {
    case CellType::Gru:
      return gru_step(lc, w, x, s.h[k]);
    case CellType::Rnn:
      return rnn_step(lc, w, x, s.h[k]);
    case CellType::Lstm:
      return lstm_step(lc, w, x, s.h[k], s.c[k]);
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
    for (size_t j = 0; j < h.size(); ++j) a += model.decoder()(v, static_cast<Eigen::Index>(j)) * h[j];
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
