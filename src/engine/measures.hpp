// Measures of one step's predictive distribution beside its score (Engine::score with StepMeasures),
// from the decoder's logits and the log-sum-exp the score itself uses, so the score stays bit-identical.
#pragma once
#include <cstdint>

namespace lstmlm::engine {

// -sum_j p_j ln p_j in nats over z[0..n), p_j = exp((z_j - max) - log_sum) (the exp in float, the sums in
// double). The p_j are renormalised by their sum, so the float rounding of log_sum does not reach the
// entropy.
float entropy_nats(const float* z, float max, float log_sum, int n);

// 1 + the number of entries of z[0..n) strictly greater than `target` (tied logits share the best rank).
int32_t rank_of(const float* z, float target, int n);

}  // namespace lstmlm::engine
