// The seam inside the low-precision backends: a weight matrix W [N, K] converted to bf16 or int8 and
// packed for one ISA, multiplied by fp32 rows. The layers (lowp/layers.cpp) are written once over it;
// each precision brings its packing and one kernel per ISA (bf16/, int8/).
//
// Contract: out[r][c] for c in [c0, c1) depends only on x[r], init[r][c] and W, computed by the same
// instructions in the same order whatever the rows, their order, the column range and the thread, so a
// row is bit-identical alone or in any batch, whole or split by columns.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "format/tensor_names.hpp"
#include "kernels/aligned.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu.hpp"
#include "kernels/lowp/cols.hpp"

namespace lstmlm::kernels::lowp {

inline constexpr int kBlock = 16;  // columns per packed block: one vector of fp32 results
inline constexpr int kGates = format::kGateCount;

// Row n of W (K floats), or null for a row of zeros (the padding of a layout).
using RowFn = std::function<const float*(int n)>;

class Gemm {
 public:
  virtual ~Gemm() = default;
  int rows_out() const { return N_; }  // N
  int padded_out() const { return round_up(N_, kBlock); }
  // out[r][c] = init[r][c] + sum_k W[c][k] x[r][k] for the columns c of every range in cols[0..n) (bounds
  // multiples of kBlock, at most padded_out()); init null = zero. x is converted once for all the ranges
  // (an LSTM step's four gates of a part of the units). out[r] must not alias x[r].
  virtual void multiply(int rows, const float* const* x, const float* const* init, float* const* out,
                        const Cols* cols, int n, Scratch& s) const = 0;
  virtual size_t bytes() const = 0;

 protected:
  Gemm(int N, int K) : N_(N), K_(K) {}
  int N_, K_;
};

// One call's converted input rows in s.bytes: rows x kp values of T, those past K zero. They meet the
// weights' zero padding, and a stale infinity left there by an earlier call would make NaN (inf x 0).
// The buffer has room for the rows rounded up to 16 (AMX reads whole tiles); those extra rows are read but
// their results are dropped, and a row's result never depends on another row, so they are not cleared.
// Returns the rows; `extra` bytes after the 16-row block are the caller's.
template <class T>
T* input_rows(Scratch& s, int rows, int K, int kp, size_t extra = 0) {
  const size_t padded = static_cast<size_t>(round_up(rows, 16)) * static_cast<size_t>(kp);
  if (s.bytes.size() < padded * sizeof(T) + extra) s.bytes.resize(padded * sizeof(T) + extra);
  T* x = reinterpret_cast<T*>(s.bytes.data());
  for (int r = 0; r < rows; ++r)
    std::fill(x + static_cast<size_t>(r) * static_cast<size_t>(kp) + static_cast<size_t>(K),
              x + static_cast<size_t>(r + 1) * static_cast<size_t>(kp), T{0});
  return x;
}

// W converted to bf16 (round to nearest even) for `isa` (Amx: AMX-BF16 tiles; Dot: AVX512-BF16; below:
// the same products and sums as AVX512-BF16 in fp32 FMAs).
std::unique_ptr<Gemm> make_bf16_gemm(Isa isa, const RowFn& row, int N, int K);
// W as int8 with one symmetric scale per row; x quantized per row at run time (int8/int8.hpp). At the
// Avx2 level (and Avx512, which int8 runs as Avx2) the kernel is AVX-VNNI where the CPU has it.
std::unique_ptr<Gemm> make_int8_gemm(Isa isa, const RowFn& row, int N, int K);
// The same on vpmaddubsw at those levels whatever the CPU: what a CPU without AVX-VNNI runs, for tests.
std::unique_ptr<Gemm> make_int8_gemm_without_avx_vnni(Isa isa, const RowFn& row, int N, int K);

// The backend of a low precision (Bf16, Int8) on `isa`, over that precision's Gemm; int8 at the AVX2 level
// without AVX-VNNI unless avx_vnni.
std::unique_ptr<Backend> make_backend(Precision precision, Isa isa, bool avx_vnni);

}  // namespace lstmlm::kernels::lowp
