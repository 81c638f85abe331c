// Kernel-side layout of the weights, built once when a Model is created (owned by the Model).
//
// Every matrix the kernels multiply by is stored transposed ([K inputs, N outputs]) in panels of 64
// columns: panel p holds columns [64p, 64p+64) for k = 0..K-1, contiguous. The columns past the last full
// panel form a narrower tail panel of 16 to 64 columns ([K][16 * tail]), zero-padded past N: at
// batch 1 a step is bound by streaming the weights, so padding N to 64 would cost up to 48 columns of it.
// A kernel streams one panel and reuses it for every row of a tile.
// Gate matrices (W_ih, W_hh, their bias, the layer-0 table) use the gate-blocked column order: for
// every full block u of 16 hidden units, the 64 columns [i f g o] x 16 units, so panel u carries
// everything the fused epilogue needs to update units 16u..16u+15. The t = H mod 16 units left over form
// the tail panel [i f g o] x t (4t columns, padded to 16 * ceil(t / 4)). State buffers keep Hp =
// 16 * ceil(H / 16) units per row; the units past H are never written and never read as inputs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "lstmlm/config.hpp"
#include "lstmlm/model.hpp"

namespace lstmlm::detail {

inline constexpr int kPanel = 64;
inline constexpr int kUnitBlock = 16;
inline constexpr int kLanes16 = 16;  // floats per V16 vector (a tail panel is a whole number of them)
inline int round_up(int n, int m) { return (n + m - 1) / m * m; }

// 64-byte aligned float storage (std::vector with an aligned allocator).
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  bool operator==(const AlignedAllocator&) const { return true; }
};
using FloatBuf = std::vector<float, AlignedAllocator<float>>;

struct PackedMat {
  int K = 0, N = 0, Np = 0;  // Np = columns in memory: 64 * full + 16 * tail
  int full = 0;              // full 64-column panels
  int tail = 0;              // 16-column vectors in the tail panel (0..4; 0 = none)
  FloatBuf data;             // [full][K][64], then the tail panel [K][16 * tail]
  int panels() const { return full; }
  // Full panel p, or the tail panel for p == panels().
  const float* panel(int p) const { return data.data() + static_cast<size_t>(p) * K * kPanel; }
  // Offset in `data` of column col, input k.
  size_t index(int col, int k) const {
    const int p = col / kPanel;
    return p < full ? (static_cast<size_t>(p) * K + k) * kPanel + col % kPanel
                    : static_cast<size_t>(full) * K * kPanel + static_cast<size_t>(k) * tail * kLanes16 +
                          (col - full * kPanel);
  }
};

struct PackedLayer {
  int H = 0, Hp = 0, G = 0;  // Hp = 16 * ceil(H / 16) state width; G = gate columns in memory (w_hh.Np)
  int in = 0, out = 0;       // input width, output width (P or H)
  int P = 0;                 // proj_size, 0 = none
  RecurrentActivation act = RecurrentActivation::Sigmoid;
  std::optional<float> clip;
  PackedMat w_ih;  // [in, G]; empty for layer 0 when the table is used
  PackedMat w_hh;  // [out, G]
  FloatBuf bias;   // [G]
  PackedMat w_hr;  // [H, P] when projected
};

struct PackedWeights {
  int V = 0, E = 0;
  // Layer 0's input term folded at load: table[v] = E[v] W_ih^T + b (one-hot: column v of W_ih + b),
  // [V][G0] in gate-blocked order. Empty when it would be much larger than the embedding: then layer 0
  // multiplies the embedding rows by w_ih like any other layer.
  FloatBuf table;
  bool use_table = false;
  const float* embedding = nullptr;  // [V, E] canonical (Model-owned), for the fallback path
  std::vector<PackedLayer> layers;
  PackedMat decoder;      // [H_last, V]
  FloatBuf decoder_bias;  // [Np]
  int max_width = 0;  // max over layers of Hp, out (rounded to 64) and E: row stride of activation buffers
  int max_gates = 0;  // max G
  int max_hp = 0;
};

PackedPtr pack_weights(const ModelConfig& config, const Weights& weights);
size_t packed_bytes(const PackedWeights& packed);

// Packs M^T of a row-major [N, K] matrix (PyTorch's [out, in]) with the identity column order.
PackedMat pack_transposed(const MatrixRM& m);

}  // namespace lstmlm::detail
