// The sampling chain (docs/generation.md): repeat penalty -> top-k -> top-p -> min-p -> temperature -> draw.
// Ordering of candidates is total and deterministic: higher (penalised) log-probability first, then the
// lower id, so ties at a top-k or top-p boundary always keep the lower ids.
#include "lstmlm/tasks/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <unordered_set>

#include "lstmlm/error.hpp"
#include "tasks/draw.hpp"

namespace lstmlm::tasks {

uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Rng Rng::stream(uint64_t seed, uint64_t index) {
  // Two rounds of mixing: streams of neighbouring seeds or indices start far apart.
  return Rng(splitmix64_mix(splitmix64_mix(seed) + index));
}

uint64_t Rng::next() {
  state_ += 0x9E3779B97F4A7C15ull;
  return splitmix64_mix(state_);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t random_seed() {
  std::random_device rd;
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  // 53 bits: the printed seed survives any JSON reader (doubles) unchanged.
  return s & ((1ull << 53) - 1);
}

namespace {

// Float rounding of the model's log-probabilities (~1e-7 relative) must not decide whether a token sits
// exactly on a top-p or min-p boundary: reaching the bound within this much counts as reaching it.
constexpr double kBoundTolerance = 1e-6;

// The penalised log-probabilities in double. llama.cpp's rule `logit > 0 ? logit / R : logit * R`
// applied to log-probabilities (all <= 0) multiplies by R: a recent token's weight p becomes p^R before
// renormalisation. Each distinct recent token is penalised once, however often it occurred.
std::vector<double> penalised(std::span<const float> logprobs, std::span<const int32_t> history,
                              const SamplerParams& p) {
  std::vector<double> w(logprobs.begin(), logprobs.end());
  if (p.repeat_penalty == 1.0f || p.repeat_last_n == 0 || history.empty()) return w;
  size_t n =
      p.repeat_last_n < 0 ? history.size() : std::min(history.size(), static_cast<size_t>(p.repeat_last_n));
  std::unordered_set<int32_t> seen(history.end() - static_cast<std::ptrdiff_t>(n), history.end());
  const double r = p.repeat_penalty;
  for (int32_t t : seen) {
    if (t < 0 || static_cast<size_t>(t) >= w.size()) continue;
    double& x = w[static_cast<size_t>(t)];
    x = x > 0 ? x / r : x * r;
  }
  return w;
}

// Greedy choice: the largest finite weight, the lowest id among equals; -1 when none is finite.
int32_t argmax(const std::vector<double>& w) {
  int32_t best = -1;
  for (size_t i = 0; i < w.size(); ++i)
    if (std::isfinite(w[i]) && (best < 0 || w[i] > w[static_cast<size_t>(best)]))
      best = static_cast<int32_t>(i);
  return best;
}

}  // namespace

Sampler::Sampler(SamplerParams params) : params_(params) { params_.validate(); }

namespace {

// The chain after the penalty (top-k -> top-p -> min-p -> temperature) on the penalised weights w: x[i]
// = float(w[i] - max) / T (a float division) over the kept tokens, at their positions, -inf for every
// other token. x / 1 is x exactly: T = 1 needs no special case to match the fused path.
void chain_log_weights(const SamplerParams& params, const std::vector<double>& w, std::vector<float>& x) {
  // Tokens with probability 0 (-inf) or NaN can never be drawn.
  std::vector<int32_t> c;
  c.reserve(w.size());
  for (size_t i = 0; i < w.size(); ++i)
    if (std::isfinite(w[i])) c.push_back(static_cast<int32_t>(i));
  if (c.empty()) throw ModelError("sampler: the model gave no finite log-probability");
  auto better = [&](int32_t a, int32_t b) {
    double wa = w[static_cast<size_t>(a)], wb = w[static_cast<size_t>(b)];
    return wa > wb || (wa == wb && a < b);
  };
  auto wmax_of = [&] {
    double m = -std::numeric_limits<double>::infinity();
    for (int32_t i : c) m = std::max(m, w[static_cast<size_t>(i)]);
    return m;
  };

  const int k = params.top_k;
  if (k > 0 && static_cast<size_t>(k) < c.size()) {
    std::nth_element(c.begin(), c.begin() + k, c.end(), better);
    c.resize(static_cast<size_t>(k));
  }

  if (params.top_p < 1.0f && c.size() > 1) {
    // The smallest prefix (in `better` order) whose mass reaches top_p of the kept mass. Sorts a growing
    // prefix only: usually a few dozen tokens hold the mass.
    const double wmax = wmax_of();
    double z = 0;
    for (int32_t i : c) z += std::exp(w[static_cast<size_t>(i)] - wmax);
    const double target = (static_cast<double>(params.top_p) - kBoundTolerance) * z;
    size_t m = std::min<size_t>(c.size(), 64);
    for (;;) {
      std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(m), c.end(), better);
      double cum = 0;
      size_t keep = 0;
      for (size_t j = 0; j < m; ++j) {
        cum += std::exp(w[static_cast<size_t>(c[j])] - wmax);
        if (cum >= target) {
          keep = j + 1;
          break;
        }
      }
      if (keep > 0) {
        c.resize(keep);
        break;
      }
      if (m == c.size()) break;  // rounding left the total short of the target: keep everything
      m = std::min(c.size(), m * 4);
    }
  }

  if (params.min_p > 0.0f) {
    // p_i >= min_p * p_max, compared as log-ratios (renormalisation cancels).
    const double bound = wmax_of() + std::log(static_cast<double>(params.min_p)) - kBoundTolerance;
    std::erase_if(c, [&](int32_t i) { return w[static_cast<size_t>(i)] < bound; });
  }

  const double wmax = wmax_of();
  const float t = params.temperature;
  x.assign(w.size(), -std::numeric_limits<float>::infinity());
  for (int32_t i : c) x[static_cast<size_t>(i)] = static_cast<float>(w[static_cast<size_t>(i)] - wmax) / t;
}

// Per-thread buffers of the draw: the vocabulary-sized weights and their block sums.
struct DrawBuffers {
  std::vector<float> w;
  std::vector<double> blocks;
};
DrawBuffers& draw_buffers() {
  thread_local DrawBuffers b;
  return b;
}

}  // namespace

SamplingDistribution Sampler::distribution(std::span<const float> logprobs,
                                           std::span<const int32_t> history) const {
  if (logprobs.empty()) throw UsageError("sampler: empty distribution");
  std::vector<double> w = penalised(logprobs, history, params_);
  SamplingDistribution d;
  if (greedy()) {
    int32_t id = argmax(w);
    if (id < 0) throw ModelError("sampler: the model gave no finite log-probability");
    d.ids = {id};
    d.probs = {1.0};
    return d;
  }
  DrawBuffers& b = draw_buffers();
  chain_log_weights(params_, w, b.w);
  tasks::detail::exp_weights(b.w);
  const double total = tasks::detail::total_weight(b.w, b.blocks);
  for (size_t i = 0; i < b.w.size(); ++i)
    if (b.w[i] > 0.0f) {
      d.ids.push_back(static_cast<int32_t>(i));
      d.probs.push_back(b.w[i] / total);
    }
  return d;
}

bool Sampler::plain(std::span<const int32_t> history) const {
  const bool penalty = params_.repeat_penalty != 1.0f && params_.repeat_last_n != 0 && !history.empty();
  return !greedy() && params_.top_k == 0 && params_.top_p >= 1.0f && params_.min_p == 0.0f && !penalty;
}

int32_t Sampler::sample_plain(std::span<const float> logprobs, Rng& rng) const {
  // chain_log_weights() without filters, fused and in float lanes: the chain's float(double(v) - max)
  // is the float difference v - max exactly (double has more than 2 x 24 + 2 bits, so rounding twice
  // equals rounding once), and the same float division by T follows. Non-finite entries become -inf.
  DrawBuffers& b = draw_buffers();
  b.w.resize(logprobs.size());
  tasks::detail::plain_log_weights(logprobs, params_.temperature, b.w);
  tasks::detail::exp_weights(b.w);
  const double total = tasks::detail::total_weight(b.w, b.blocks);
  return tasks::detail::draw_position(b.w, b.blocks, total, rng.uniform());
}

int32_t Sampler::sample(std::span<const float> logprobs, std::span<const int32_t> history, Rng& rng) const {
  if (logprobs.empty()) throw UsageError("sampler: empty distribution");
  if (plain(history)) return sample_plain(logprobs, rng);
  std::vector<double> w = penalised(logprobs, history, params_);
  if (greedy()) {
    const int32_t id = argmax(w);
    if (id < 0) throw ModelError("sampler: the model gave no finite log-probability");
    return id;
  }
  DrawBuffers& b = draw_buffers();
  chain_log_weights(params_, w, b.w);
  tasks::detail::exp_weights(b.w);
  const double total = tasks::detail::total_weight(b.w, b.blocks);
  return tasks::detail::draw_position(b.w, b.blocks, total, rng.uniform());
}

}  // namespace lstmlm::tasks
