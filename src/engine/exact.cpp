// The double-precision path (engine/exact.hpp). The float weights are widened as they are read, so a model
// converted from rnnlm's binary file (float32 weights) computes exactly what rnnlm computes.
#include "engine/exact.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/exact_exp.hpp"
#include "format/tensor_names.hpp"

namespace lstmlm::engine {

namespace {

// rnnlm 0.3e's primes, from which it hashes an n-gram history into the direct connections' table.
constexpr std::array<uint32_t, 36> kPrimes = {
    108641969, 116049371, 125925907, 133333309, 145678979, 175308587, 197530793, 234567803, 251851741,
    264197411, 330864029, 399999781, 407407183, 459258997, 479012069, 545678687, 560493491, 607407037,
    629629243, 656789717, 716048933, 718518067, 725925469, 733332871, 753085943, 755555077, 782715551,
    790122953, 812345159, 814814293, 893826581, 923456189, 940740127, 953085797, 985184539, 990122807};

constexpr double kClip = 50.0;  // rnnlm clips every sigmoid and softmax argument to [-50, 50]

// out[i] = W[i] . x for rows [0, rows) of a row-major W of width n, each sum over j in ascending order
// (rnnlm's order, so the bits are its). Eight rows run together: eight independent chains of additions keep
// the FPU busy where one chain waits on each add's latency; no row's order changes.
void rows_dot(const double* w, size_t rows, size_t n, const double* x, double* out) {
  constexpr size_t kRows = 8;
  size_t i = 0;
  for (; i + kRows <= rows; i += kRows) {
    const double* r = w + i * n;
    double a[kRows] = {};
    for (size_t j = 0; j < n; ++j) {
      const double xj = x[j];
      for (size_t k = 0; k < kRows; ++k) a[k] += r[k * n + j] * xj;
    }
    for (size_t k = 0; k < kRows; ++k) out[i + k] = a[k];
  }
  for (; i < rows; ++i) {
    const double* wr = w + i * n;
    double acc = 0.0;
    for (size_t j = 0; j < n; ++j) acc += wr[j] * x[j];
    out[i] = acc;
  }
}

// The weights in double, made once per model: an F64 tensor's own values (Weights::f64), any other widened.
// The biases are read as float (the sum of two biases is kept only in float).
struct Weights64 {
  struct Layer {
    std::vector<double> w_ih, w_hh, bias, bias_hh, w_hr, w_ci, w_cf, w_co;
  };
  struct Dense {
    std::vector<double> w, b;
  };
  std::vector<Layer> layers;
  std::vector<Dense> head;
  std::vector<double> embedding, class_w, class_b, dec, dec_b, direct;
  // Each class's first word and its count (a class's words are contiguous ids): made once per model, not
  // per engine call (an O(V) pass, a generated token's cost at large vocabularies).
  std::vector<int32_t> class_begin, class_count;

  explicit Weights64(const Model& m) {
    namespace tn = format::tensor_names;
    const Weights& w = m.weights();
    auto get = [&](const std::string& name, const float* p, Eigen::Index n) {
      auto it = w.f64.find(name);
      if (it != w.f64.end() && it->second.size() == size_t(n)) return it->second;
      return std::vector<double>(p, p + n);
    };
    const ModelConfig& c = m.config();
    auto widen = [](const auto& v) { return std::vector<double>(v.data(), v.data() + v.size()); };
    for (size_t k = 0; k < c.layers.size(); ++k) {
      const LayerWeights& lw = w.layers[k];
      const std::string cell = to_string(c.layers[k].cell);
      layers.push_back({get(tn::weight_ih(k, cell), lw.w_ih.data(), lw.w_ih.size()),
                        get(tn::weight_hh(k, cell), lw.w_hh.data(), lw.w_hh.size()), widen(lw.bias),
                        widen(lw.bias_hh), get(tn::weight_hr(k, cell), lw.w_hr.data(), lw.w_hr.size()),
                        get(tn::weight_ci(k, cell), lw.w_ci.data(), lw.w_ci.size()),
                        get(tn::weight_cf(k, cell), lw.w_cf.data(), lw.w_cf.size()),
                        get(tn::weight_co(k, cell), lw.w_co.data(), lw.w_co.size())});
    }
    for (size_t k = 0; k < w.head.size(); ++k)
      head.push_back({get(tn::head_weight(k), w.head[k].weight.data(), w.head[k].weight.size()),
                      get(tn::head_bias(k), w.head[k].bias.data(), w.head[k].bias.size())});
    embedding = get(tn::embedding(), w.embedding.data(), w.embedding.size());
    class_w = get(tn::class_weight(), w.class_weight.data(), w.class_weight.size());
    class_b = get(tn::class_bias(), w.class_bias.data(), w.class_bias.size());
    dec = c.tied ? embedding : get(tn::decoder_weight(), w.decoder.data(), w.decoder.size());
    dec_b = get(tn::decoder_bias(), w.decoder_bias.data(), w.decoder_bias.size());
    direct = get(tn::direct_weight(), w.direct.data(), w.direct.size());
    if (c.classes > 0) {
      class_begin.assign(size_t(c.classes), 0);
      class_count.assign(size_t(c.classes), 0);
      for (int32_t i = c.vocab_size - 1; i >= 0; --i) {
        const size_t k = size_t(w.word_class[size_t(i)]);
        class_begin[k] = i;
        ++class_count[k];
      }
    }
  }
};

class Exact {
 public:
  Exact(const Model& m, const Job& job, const Weights64& w64)
      : c_(m.config()), w_(m.weights()), x_(w64), job_(job) {
    V_ = c_.vocab_size;
    C_ = c_.classes;
    in_ = c_.decoder_input_size();
    rnnlm_ = c_.exp == ExpKind::Rnnlm;
  }

  // ClassFactors' view: the state loaded, the two factors computed on demand.
  void load_state(const State& s) { load(s); }
  const std::vector<double>& class_factor() {
    class_probs();
    return pc_;
  }
  const std::vector<double>& word_factor(int k) {
    word_probs(k);
    return pw_;
  }
  int32_t first_word(int k) const { return begin_[size_t(k)]; }

  void run_row(size_t r) {
    const Sequences& in = *job_.inputs;
    State& s = (*job_.states)[r];
    load(s);
    const auto& row = in[r];
    for (size_t t = 0; t < row.size(); ++t) {
      step(row[t]);
      if (auto* top = job_.measures.top)
        std::copy(h_.back().begin(), h_.back().end(), (*top)[r].begin() + ptrdiff_t(t * h_.back().size()));
      switch (job_.mode) {
        case Mode::Score:
          score(r, t, (*job_.targets)[r][t]);
          break;
        case Mode::Logprobs:
          full((*job_.logprobs)[r].row(Eigen::Index(t)).data());
          break;
        case Mode::Predict:
        case Mode::Advance:
          break;
      }
    }
    if (job_.mode == Mode::Predict) full(job_.predict->row(Eigen::Index(r)).data());
    store(s);
  }

 private:
  double exp_of(double x) const { return rnnlm_ ? rnnlm_exp(x) : std::exp(x); }
  double clip(double x) const { return rnnlm_ ? std::clamp(x, -kClip, kClip) : x; }

  double activate(Activation a, double x) const {
    switch (a) {
      case Activation::Sigmoid:
        return 1.0 / (1.0 + exp_of(-clip(x)));
      case Activation::Tanh:
        return std::tanh(x);
      case Activation::Relu:
        return x > 0 ? x : 0.0;
      case Activation::Linear:
        break;
    }
    return x;
  }

  void load(const State& s) {
    h_.resize(s.h.size());
    for (size_t k = 0; k < s.h.size(); ++k) {
      if (s.h64.size() == s.h.size() && s.h64[k].size() == s.h[k].size())
        h_[k] = s.h64[k];
      else
        h_[k].assign(s.h[k].begin(), s.h[k].end());
    }
    c64_.resize(s.c.size());
    for (size_t k = 0; k < s.c.size(); ++k) {
      if (s.c64.size() == s.c.size() && s.c64[k].size() == s.c[k].size())
        c64_[k] = s.c64[k];
      else
        c64_[k].assign(s.c[k].begin(), s.c[k].end());
    }
    hist_.assign(size_t(std::max(c_.direct_order, 1)), 0);
    decoder_input();
    for (size_t i = 0; i < hist_.size() && i < s.history.size(); ++i) hist_[i] = s.history[i];
  }

  void store(State& s) const {
    s.h64 = h_;
    s.c64 = c64_;
    for (size_t k = 0; k < h_.size(); ++k) {
      for (size_t j = 0; j < h_[k].size(); ++j) s.h[k][j] = static_cast<float>(h_[k][j]);
      for (size_t j = 0; j < c64_[k].size(); ++j) s.c[k][j] = static_cast<float>(c64_[k][j]);
    }
    s.history.assign(hist_.begin(), hist_.begin() + ptrdiff_t(c_.direct_order));
  }

  double gate(RecurrentActivation a, double x) const {
    switch (a) {
      case RecurrentActivation::HardSigmoid:
        return std::clamp(0.2 * x + 0.5, 0.0, 1.0);
      case RecurrentActivation::HardSigmoidKeras3:
        return std::clamp(x / 6.0 + 0.5, 0.0, 1.0);
      case RecurrentActivation::Sigmoid:
        break;
    }
    return activate(Activation::Sigmoid, x);
  }

  // out[i] = W[i] . x for rows [0, rows) of a row-major W of width x.size().
  static void matvec(const std::vector<double>& w, const std::vector<double>& x, size_t rows,
                     std::vector<double>& out) {
    out.assign(rows, 0.0);
    rows_dot(w.data(), rows, x.size(), x.data(), out.data());
  }

  // One input through the layers; the input V is the zero vector (no word). A pre-activation is the
  // recurrent sum, then the input's term, then the bias, as rnnlm adds them.
  void step(int32_t x) {
    const bool none = x >= V_;
    for (size_t k = 0; k < h_.size(); ++k) {
      const Weights64::Layer& lw = x_.layers[k];
      const LayerConfig& lc = c_.layers[k];
      const size_t H = size_t(lc.hidden_size), G = size_t(lc.gate_count()) * H;
      matvec(lw.w_hh, h_[k], G, rec_);
      if (k == 0) {
        inp_.assign(G, 0.0);
        if (!none) add_input0(x, G);
      } else {
        matvec(lw.w_ih, h_[k - 1], G, inp_);
      }
      switch (lc.cell) {
        case CellType::Rnn:
          next_.resize(H);
          for (size_t i = 0; i < H; ++i) next_[i] = activate(lc.activation, rec_[i] + inp_[i] + lw.bias[i]);
          break;
        case CellType::Lstm:
          lstm(lw, lc, c64_[k]);
          break;
        case CellType::Gru:
          gru(lw, lc, h_[k]);
          break;
      }
      h_[k].swap(next_);
    }
    decoder_input();
    for (size_t i = hist_.size() - 1; i > 0; --i) hist_[i] = hist_[i - 1];
    hist_[0] = none ? -1 : x;
  }

  // y_: the top layer's output through the output head's Dense layers.
  void decoder_input() {
    y_ = h_.back();
    for (size_t k = 0; k < x_.head.size(); ++k) {
      matvec(x_.head[k].w, y_, size_t(c_.head[k].units), next_);
      for (size_t i = 0; i < next_.size(); ++i)
        next_[i] = activate(c_.head[k].activation, next_[i] + x_.head[k].b[i]);
      y_.swap(next_);
    }
  }

  // PyTorch's gate order i f g o; peepholes, the cell clip, the projection and its clip (model-format.md).
  void lstm(const Weights64::Layer& lw, const LayerConfig& lc, std::vector<double>& c) {
    const size_t H = size_t(lc.hidden_size);
    std::vector<double>& z = rec_;
    for (size_t i = 0; i < 4 * H; ++i) z[i] = z[i] + inp_[i] + lw.bias[i];
    const bool peep = !lw.w_ci.empty();
    next_.resize(H);
    for (size_t i = 0; i < H; ++i) {
      const double ig = gate(lc.recurrent_activation, z[i] + (peep ? lw.w_ci[i] * c[i] : 0.0));
      const double fg = gate(lc.recurrent_activation, z[H + i] + (peep ? lw.w_cf[i] * c[i] : 0.0));
      double cn = fg * c[i] + ig * activate(lc.activation, z[2 * H + i]);
      if (lc.cell_clip) cn = std::clamp(cn, -double(*lc.cell_clip), double(*lc.cell_clip));
      const double og = gate(lc.recurrent_activation, z[3 * H + i] + (peep ? lw.w_co[i] * cn : 0.0));
      c[i] = cn;
      next_[i] = og * activate(lc.activation, cn);
    }
    if (lc.proj_size > 0) {
      std::vector<double> full = next_;
      matvec(lw.w_hr, full, size_t(lc.proj_size), next_);
      if (lc.proj_clip)
        for (double& v : next_) v = std::clamp(v, -double(*lc.proj_clip), double(*lc.proj_clip));
    }
  }

  // Gate order r z n; reset_after: r multiplies (W_hn h + b_hn), else W_hn multiplies (r h).
  void gru(const Weights64::Layer& lw, const LayerConfig& lc, const std::vector<double>& h) {
    const size_t H = size_t(lc.hidden_size);
    const bool after = lc.reset_after;
    std::vector<double> r(H), zg(H);
    for (size_t i = 0; i < H; ++i) {
      const double bh_r = after ? lw.bias_hh[i] : 0.0, bh_z = after ? lw.bias_hh[H + i] : 0.0;
      r[i] = gate(lc.recurrent_activation, inp_[i] + lw.bias[i] + rec_[i] + bh_r);
      zg[i] = gate(lc.recurrent_activation, inp_[H + i] + lw.bias[H + i] + rec_[H + i] + bh_z);
    }
    std::vector<double> hn(H);
    if (after) {
      for (size_t i = 0; i < H; ++i) hn[i] = r[i] * (rec_[2 * H + i] + lw.bias_hh[2 * H + i]);
    } else {
      std::vector<double> rh(H);
      for (size_t i = 0; i < H; ++i) rh[i] = r[i] * h[i];
      const std::vector<double> wn(lw.w_hh.begin() + ptrdiff_t(2 * H * H), lw.w_hh.end());
      matvec(wn, rh, H, hn);
    }
    next_.resize(H);
    for (size_t i = 0; i < H; ++i) {
      const double n = activate(lc.activation, inp_[2 * H + i] + lw.bias[2 * H + i] + hn[i]);
      next_[i] = (1.0 - zg[i]) * n + zg[i] * h[i];
    }
  }

  void add_input0(int32_t x, size_t G) {
    const std::vector<double>& wih = x_.layers[0].w_ih;
    if (c_.embedding_dim == 0) {
      for (size_t i = 0; i < G; ++i) inp_[i] += wih[i * size_t(V_) + size_t(x)];
      return;
    }
    const size_t E = size_t(c_.embedding_dim);
    dots_.resize(G);
    rows_dot(wih.data(), G, E, x_.embedding.data() + size_t(x) * E, dots_.data());
    for (size_t i = 0; i < G; ++i) inp_[i] += dots_[i];
  }

  // out[i] = W[first + i] . y_ + b[first + i] for i < n (the dot product, then the bias, as rnnlm adds them).
  void logits(const std::vector<double>& w, const std::vector<double>& b, size_t first, size_t n,
              std::vector<double>& out) const {
    const size_t in = size_t(in_);
    out.assign(n, 0.0);
    rows_dot(w.data() + first * in, n, in, y_.data(), out.data());
    for (size_t i = 0; i < n; ++i) out[i] += b[first + i];
  }

  // rnnlm's hash of the n-gram history for each order a (0 = the bias feature): the start of its block of
  // C class weights in the table's first half, or (word = the class + 1) of its block of the class's words
  // in the second half. 0 marks an order not used (an unknown word in its history: that and every higher
  // one).
  void hashes(uint64_t mult, bool words, std::vector<uint64_t>& hash) const {
    const int K = c_.direct_order;
    const uint64_t N = uint64_t(c_.direct_size), half = N / 2;
    hash.assign(size_t(K), 0);
    for (int a = 0; a < K; ++a) {
      if (a > 0 && hist_[size_t(a - 1)] == -1) break;
      // The primes' product wraps in 32 bits, as in rnnlm, before it is widened.
      uint64_t h = uint64_t(uint32_t(kPrimes[0] * kPrimes[1])) * mult;
      for (int b = 1; b <= a; ++b) {
        const uint32_t p = kPrimes[(uint32_t(a) * kPrimes[size_t(b)] + uint32_t(b)) % kPrimes.size()];
        h += uint64_t(p) * uint64_t(int64_t(hist_[size_t(b - 1)]) + 1);
      }
      hash[size_t(a)] = words ? h % half + half : h % half;
    }
  }

  // The classes' probabilities (rnnlm's order: logits, direct weights, clip, exp, one sum, division).
  void class_probs() {
    logits(x_.class_w, x_.class_b, 0, size_t(C_), pc_);
    if (c_.direct_size > 0) {
      hashes(1, false, hash_);
      for (int k = 0; k < C_; ++k)
        for (auto& h : hash_) {
          if (h == 0) break;
          pc_[size_t(k)] += x_.direct[h];
          ++h;
        }
    }
    normalize(pc_);
  }

  // The probabilities of class k's words given the class.
  void word_probs(int k) {
    const int32_t b = begin_[size_t(k)], n = count_[size_t(k)];
    logits(x_.dec, x_.dec_b, size_t(b), size_t(n), pw_);
    if (c_.direct_size > 0) {
      hashes(uint64_t(k) + 1, true, hash_);
      const uint64_t N = uint64_t(c_.direct_size);
      for (int32_t i = 0; i < n; ++i)
        for (auto& h : hash_) {
          if (h == 0) break;
          pw_[size_t(i)] += x_.direct[h];
          h = (h + 1) % N;
        }
    }
    normalize(pw_);
  }

  // Softmax in place: rnnlm's (clipped, its exp, no shift) or a shifted exact one.
  void normalize(std::vector<double>& z) const {
    const double shift = rnnlm_ || z.empty() ? 0.0 : *std::max_element(z.begin(), z.end());
    double sum = 0.0;
    for (double& v : z) {
      v = exp_of(clip(v) - shift);
      sum += v;
    }
    for (double& v : z) v /= sum;
  }

  // The full softmax over the vocabulary (no classes).
  void full_softmax(std::vector<double>& p) {
    logits(x_.dec, x_.dec_b, 0, size_t(V_), p);
    normalize(p);
  }

  double prob(int32_t target) {
    if (C_ == 0) {
      full_softmax(pw_);
      return pw_[size_t(target)];
    }
    class_probs();
    const int k = w_.word_class[size_t(target)];
    word_probs(k);
    return pc_[size_t(k)] * pw_[size_t(target - begin_[size_t(k)])];
  }

  void score(size_t r, size_t t, int32_t target) {
    const bool none = target >= V_;
    const double lp = none ? std::numeric_limits<double>::quiet_NaN() : std::log(prob(target));
    (*job_.scores)[r][t] = static_cast<float>(lp);
    if (auto* d = job_.measures.logprob64) (*d)[r][t] = lp;
    if (job_.measures.entropy || job_.measures.rank) {
      full(nullptr);
      if (auto* e = job_.measures.entropy) {
        double h = 0.0;
        for (double p : dist_)
          if (p > 0) h -= p * std::log(p);
        (*e)[r][t] = static_cast<float>(h);
      }
      if (auto* k = job_.measures.rank) {
        int32_t above = 0;
        if (!none)
          for (double p : dist_) above += p > dist_[size_t(target)] ? 1 : 0;
        (*k)[r][t] = above + 1;
      }
    }
  }

  // Every word's probability into dist_ (and its log into out, when given).
  void full(float* out) {
    if (C_ == 0) {
      full_softmax(dist_);
    } else {
      dist_.assign(size_t(V_), 0.0);
      class_probs();
      for (int k = 0; k < C_; ++k) {
        if (count_[size_t(k)] == 0) continue;
        word_probs(k);
        for (int32_t i = 0; i < count_[size_t(k)]; ++i)
          dist_[size_t(begin_[size_t(k)] + i)] = pc_[size_t(k)] * pw_[size_t(i)];
      }
    }
    if (out)
      for (int32_t i = 0; i < V_; ++i) out[i] = static_cast<float>(std::log(dist_[size_t(i)]));
  }

  const ModelConfig& c_;
  const Weights& w_;
  const Weights64& x_;
  const Job& job_;
  int32_t V_ = 0;
  int C_ = 0, in_ = 0;
  bool rnnlm_ = false;
  const std::vector<int32_t>& begin_ = x_.class_begin;
  const std::vector<int32_t>& count_ = x_.class_count;
  std::vector<std::vector<double>> h_;
  std::vector<std::vector<double>> c64_;  // each layer's memory vector (an LSTM's c)
  std::vector<double> next_, rec_, inp_, y_, pc_, pw_, dist_, dots_;
  std::vector<int32_t> hist_;
  std::vector<uint64_t> hash_;
};

}  // namespace

static std::shared_ptr<const Weights64> weights64(const Model& model) {
  return std::static_pointer_cast<const Weights64>(
      model.derived("exact-f64", [&] { return std::make_shared<const Weights64>(model); }));
}

void exact_forward(const Model& model, const Job& job) {
  const auto w64 = weights64(model);
  Exact e(model, job, *w64);
  for (size_t r = 0; r < job.inputs->size(); ++r) e.run_row(r);
}

struct ClassFactors::Impl {
  explicit Impl(const Model& m) : w64(weights64(m)), exact(m, job, *w64) {}
  Job job;  // unused: the factors need no job
  std::shared_ptr<const Weights64> w64;
  Exact exact;
};

ClassFactors::ClassFactors(const Model& model) : impl_(std::make_unique<Impl>(model)) {}
ClassFactors::~ClassFactors() = default;
void ClassFactors::load(const State& state) { impl_->exact.load_state(state); }
const std::vector<double>& ClassFactors::classes() { return impl_->exact.class_factor(); }
const std::vector<double>& ClassFactors::words(int k) { return impl_->exact.word_factor(k); }
int32_t ClassFactors::first_word(int k) const { return impl_->exact.first_word(k); }

}  // namespace lstmlm::engine
