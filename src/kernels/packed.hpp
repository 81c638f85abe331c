// Kernel-side layout of the weights, built once when a Model is created (owned by the Model).
//
// Every matrix the kernels multiply by is stored transposed ([K inputs, N outputs]) in panels of 64
// columns: panel p holds columns [64p, 64p+64) for k = 0..K-1, contiguous, zero-padded past N. A kernel
// streams one panel and reuses it for every row of a tile.
// Gate matrices (W_ih, W_hh, their bias, the layer-0 table) use the gate-blocked column order: for
// every block u of 16 hidden units, the 64 columns [i f g o] x 16 units, so panel u carries everything
// the fused epilogue needs to update units 16u..16u+15. H is padded to Hp = 16 * ceil(H / 16) with zero
// weights and zero bias: a padded unit sees gates 0, keeps c = 0 and outputs h = 0.
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
  int K = 0, N = 0, Np = 0;  // Np = N rounded up to a multiple of 64
  FloatBuf data;             // [Np / 64][K][64]
  int panels() const { return Np / kPanel; }
  const float* panel(int p) const { return data.data() + static_cast<size_t>(p) * K * kPanel; }
};

struct PackedLayer {
  int H = 0, Hp = 0, G = 0;  // G = 4 Hp gate columns
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
