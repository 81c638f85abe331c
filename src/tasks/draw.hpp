// The last step of the sampling chain: weights from log-weights, and one inverse-CDF draw over them.
// Defined by exactly specified operations only (the lane-wise float exp of kernels/simd.hpp, double sums
// in a fixed order over vocabulary positions), so a draw is the same on every ISA, batch and thread count.
// Weights live at their token's position in a vocabulary-sized array, with 0 for a token that cannot be
// drawn: adding an exact 0 changes no sum, so the fused path (no filters) and the filtered path give the
// same bits when the filters keep everything.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace lstmlm::tasks::detail {

// x[i] = (v[i] - max) / t in float, max over the finite v, and -inf where v[i] is not finite: the
// temperature step of a chain without filters. Throws ModelError when no v[i] is finite.
void plain_log_weights(std::span<const float> v, float t, std::span<float> x);

// In place: x[i] (a log-weight relative to the largest, <= 0; -inf for a token that cannot be drawn)
// becomes exp(x[i]) by simd::exp, or 0 where x[i] < -87.3 (the float exp's range; such a token weighs
// less than 1e-37 of the most likely one).
void exp_weights(std::span<float> x);

// The weights' total, summed in blocks of kDrawBlock positions (4 interleaved double accumulators per
// block, then the blocks in order); block_sums receives each block's sum.
inline constexpr size_t kDrawBlock = 64;
double total_weight(std::span<const float> w, std::vector<double>& block_sums);

// The first position whose cumulative weight exceeds u * total (u in [0, 1)), the cumulative sum taken
// over whole blocks, then position by position inside the block that crosses. Rounding can leave a
// crossing block's positions just short: its last position with a weight is taken then. -1 when every
// weight is 0.
int32_t draw_position(std::span<const float> w, std::span<const double> block_sums, double total, double u);

}  // namespace lstmlm::tasks::detail
