// The fp32 backend's weight layout, private to src/kernels/fp32.
//
// Every matrix the kernels multiply by is stored transposed ([K inputs, N outputs]) in panels of
// kPanel = 64 columns (4 vectors of 16 floats): panel p holds columns [64p, 64p+64) for k = 0..K-1,
// contiguous. The columns past the last full panel form a narrower tail panel of 16 to 64 columns
// ([K][16 * tail]), zero-padded past N: at batch 1 a step is bound by streaming the weights, so padding
// N to 64 would cost up to 48 columns of it. A kernel streams one panel and reuses it for every row of a
// tile.
//
// Gate matrices (W_ih, W_hh, their bias, folded input terms) use the gate-blocked column order: for
// every block of kUnitBlock = 16 hidden units, the kGates x 16 = 64 columns [i f g o] x 16 units, so
// one panel carries everything the fused epilogue needs to update 16 units. The t = H mod 16 units left
// over form the tail panel [i f g o] x t (4t columns, padded to 16 * ceil(t / 4)). State buffers keep
// Hp = 16 * ceil(H / 16) units per row; the units past H are never written and never read as inputs.
#pragma once
#include <cstddef>

#include "format/tensor_names.hpp"
#include "kernels/aligned.hpp"
#include "kernels/backend.hpp"

namespace lstmlm::kernels::fp32 {

inline constexpr int kLanes = 16;        // floats per V16 vector (simd.hpp)
inline constexpr int kPanelVectors = 4;  // vectors per full panel row
inline constexpr int kPanel = kPanelVectors * kLanes;
inline constexpr int kGates = format::kGateCount;  // an LSTM's gates, in the canonical order (i f g o)
inline constexpr int kUnitBlock = kLanes;
// One block of units is exactly one full panel: the epilogue finds a unit's four gates in one tile.
static_assert(kGates * kUnitBlock == kPanel);

struct PackedMat {
  int K = 0, N = 0, Np = 0;  // Np = columns in memory: kPanel * full + kLanes * tail
  int full = 0;              // full panels
  int tail = 0;              // vectors in the tail panel (0..kPanelVectors; 0 = none)
  FloatBuf data;             // [full][K][kPanel], then the tail panel [K][kLanes * tail]
  // Full panel p, or the tail panel for p == full.
  const float* panel(int p) const { return data.data() + static_cast<size_t>(p) * K * kPanel; }
  // Offset in `data` of column col, input k.
  size_t index(int col, int k) const {
    const int p = col / kPanel;
    return p < full ? (static_cast<size_t>(p) * K + k) * kPanel + col % kPanel
                    : static_cast<size_t>(full) * K * kPanel + static_cast<size_t>(k) * tail * kLanes +
                          (col - full * kPanel);
  }
  size_t bytes() const { return data.size() * sizeof(float); }
};

// Gate-blocked column of gate g of unit `unit` in a layer of H units (inline: the packers and the
// table fold call it once per weight).
inline int gate_col(int g, int unit, int H) {
  const int full = H / kUnitBlock * kUnitBlock;
  if (unit < full) return (unit / kUnitBlock) * kPanel + g * kUnitBlock + unit % kUnitBlock;
  const int t = H - full;
  return full / kUnitBlock * kPanel + g * t + (unit - full);
}
// Gate columns in memory for H units: 64 per full block, the tail's 4t rounded up to 16.
int gate_columns(int H);
// W^T of a [kGates H, K] row-major gate matrix, gate-blocked.
PackedMat pack_gates(const Rows& w, int H, int K);
// M^T of a row-major [N, K] matrix (PyTorch's [out, in]), identity column order.
PackedMat pack_transposed(const Rows& m, int N, int K);

}  // namespace lstmlm::kernels::fp32
