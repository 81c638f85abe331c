#include "tasks/draw.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/simd.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::tasks::detail {

void plain_log_weights(std::span<const float> v, float t, std::span<float> x) {
  using namespace kernels::simd;
  const V16 inf = set1(INFINITY), none = set1(-INFINITY);
  const size_t n = v.size(), full = n / kLanes * kLanes;
  const int rest = static_cast<int>(n - full);
  auto finite = [&](V16 a) { return select_lt(abs(a), inf, a, none); };
  V16 m = none;
  for (size_t i = 0; i < full; i += kLanes) m = max(m, finite(load(v.data() + i)));
  if (rest > 0) m = max(m, finite(load_n(v.data() + full, rest, -INFINITY)));
  const float vmax = reduce_max(m);
  if (!(vmax > -INFINITY)) throw ModelError("sampler: the model gave no finite log-probability");
  const V16 vm = set1(vmax), vt = set1(t);
  auto weight = [&](V16 a) { return select_lt(abs(a), inf, (a - vm) / vt, none); };
  for (size_t i = 0; i < full; i += kLanes) store(x.data() + i, weight(load(v.data() + i)));
  if (rest > 0) store_n(x.data() + full, weight(load_n(v.data() + full, rest, 0.0f)), rest);
}

void exp_weights(std::span<float> x) {
  using namespace kernels::simd;
  const V16 floor = set1(-87.3f), zero = set1(0.0f);
  const size_t n = x.size(), full = n / kLanes * kLanes;
  for (size_t i = 0; i < full; i += kLanes) {
    const V16 v = load(x.data() + i);
    store(x.data() + i, select_lt(v, floor, zero, kernels::simd::exp(v)));
  }
  if (full < n) {
    const int t = static_cast<int>(n - full);
    const V16 v = load_n(x.data() + full, t, -INFINITY);
    store_n(x.data() + full, select_lt(v, floor, zero, kernels::simd::exp(v)), t);
  }
}

namespace {

double block_sum(const float* w, size_t n) {
  double a[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (size_t j = 0; j < 4; ++j) a[j] += w[i + j];
  for (size_t j = 0; i < n; ++i, ++j) a[j] += w[i];
  return (a[0] + a[1]) + (a[2] + a[3]);
}

}  // namespace

double total_weight(std::span<const float> w, std::vector<double>& block_sums) {
  const size_t blocks = (w.size() + kDrawBlock - 1) / kDrawBlock;
  block_sums.resize(blocks);
  double total = 0;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t lo = b * kDrawBlock;
    block_sums[b] = block_sum(w.data() + lo, std::min(kDrawBlock, w.size() - lo));
    total += block_sums[b];
  }
  return total;
}

int32_t draw_position(std::span<const float> w, std::span<const double> block_sums, double total, double u) {
  const double target = u * total;
  double cum = 0;
  int32_t last = -1;
  for (size_t b = 0; b < block_sums.size(); ++b) {
    const size_t lo = b * kDrawBlock, hi = std::min(w.size(), lo + kDrawBlock);
    if (!(cum + block_sums[b] > target)) {
      cum += block_sums[b];
      continue;
    }
    double c = cum;
    for (size_t j = lo; j < hi; ++j) {
      if (w[j] == 0.0f) continue;
      last = static_cast<int32_t>(j);
      c += w[j];
      if (c > target) return last;
    }
    return last;
  }
  // Only when every weight is 0 (or u * total rounds up to total): the last position with a weight.
  for (size_t j = w.size(); j-- > 0;)
    if (w[j] != 0.0f) return static_cast<int32_t>(j);
  return -1;
}

}  // namespace lstmlm::tasks::detail
