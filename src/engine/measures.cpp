#include "engine/measures.hpp"

#include <cmath>

namespace lstmlm::engine {

float entropy_nats(const float* z, float max, float log_sum, int n) {
  // With q_j = p_j / S, S = sum p_j: H = -sum q_j ln q_j = ln S - (sum p_j d_j) / S. A zero p_j
  // (a logit of -inf) adds nothing, where 0 * -inf would be NaN.
  // d_j = (z_j - max) - log_sum is exactly the log-prob the score reports; its exp in float (a few ulp, far
  // inside the 1e-4 contract, and much cheaper than a double exp per vocabulary entry), the sums in double.
  double s = 0, a = 0;
  for (int j = 0; j < n; ++j) {
    const float d = (z[j] - max) - log_sum;
    const float p = std::exp(d);
    if (p == 0) continue;
    s += double(p);
    a += double(p) * double(d);
  }
  return static_cast<float>(std::log(s) - a / s);
}

int32_t rank_of(const float* z, float target, int n) {
  int32_t greater = 0;
  for (int j = 0; j < n; ++j) greater += z[j] > target ? 1 : 0;
  return 1 + greater;
}

}  // namespace lstmlm::engine
