// bf16 weights packed once (bf16.hpp), input rows rounded per call, one kernel per ISA chosen at load.
#include "kernels/lowp/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/bf16/bf16.hpp"
#include "kernels/fma.hpp"

namespace lstmlm::kernels::bf16 {

namespace {

using lowp::Cols;

// Round to nearest even; NaN stays a (quiet) NaN, a denormal result becomes a signed zero.
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint32_t mag = u & 0x7fffffffu;
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  if ((r & 0x7f80u) == 0) r &= 0x8000u;
  if (mag > 0x7f800000u) r = (u >> 16) | 0x40u;
  return static_cast<uint16_t>(r);
}
float from_bf16(uint16_t b) {
  const uint32_t u = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

class Gemm final : public lowp::Gemm {
 public:
  Gemm(Isa isa, const lowp::RowFn& row, int N, int K)
      : lowp::Gemm(N, K),
        kp_(round_up(std::max(K, 1), isa == Isa::Amx && kHasAmx ? kDepthAlignAmx : kDepthAlign)),
        kernel_(pick(isa)) {
    const int blocks = padded_out() / lowp::kBlock;
    w_.assign(static_cast<size_t>(blocks) * static_cast<size_t>(kp_) * 16, 0);
    for (int n = 0; n < N; ++n) {
      const float* r = row(n);
      if (!r) continue;
      uint16_t* b = w_.data() + static_cast<size_t>(n / 16) * static_cast<size_t>(kp_) * 16;
      for (int k = 0; k < K; ++k)
        b[static_cast<size_t>(k / 2) * 32 + size_t(n % 16) * 2 + size_t(k % 2)] = to_bf16(r[k]);
    }
  }

  void multiply(int rows, const float* const* x, const float* const* init, float* const* out,
                const Cols* cols, int n, Scratch& s) const override {
    if (rows <= 0) return;
    uint16_t* xb = lowp::input_rows<uint16_t>(s, rows, K_, kp_);
    for (int r = 0; r < rows; ++r) {
      uint16_t* d = xb + static_cast<size_t>(r) * static_cast<size_t>(kp_);
      const float* src = x[r];
      for (int k = 0; k < K_; ++k) d[k] = to_bf16(src[k]);
    }
    Args a;
    a.rows = rows;
    a.kp = kp_;
    a.x = xb;
    a.w = w_.data();
    a.init = init;
    a.out = out;
    a.cols = cols;
    a.n = n;
    kernel_(a);
  }
  size_t bytes() const override { return w_.size() * sizeof(uint16_t); }

 private:
  using Kernel = void (*)(const Args&);
  static Kernel pick(Isa isa) {
    switch (isa) {
#if defined(__aarch64__)
      case Isa::Neon:
        return &fma_neon;
#elif defined(__x86_64__)
      case Isa::Amx:
        return &dot_amx;
      case Isa::Dot:
        return &dot_avx512;
      case Isa::Avx512:
        return &fma_avx512;
      case Isa::Avx2:
        return &fma_avx2;
#endif
      default:
        return &fma_scalar;
    }
  }
  int kp_;
  Kernel kernel_;
  std::vector<uint16_t, AlignedAllocator<uint16_t>> w_;
};

}  // namespace

void fma_scalar(const Args& a) {
  for (int q = 0; q < a.n; ++q)
    for (int c0 = a.cols[q].begin; c0 < a.cols[q].end; c0 += 16) {
      const uint16_t* b = a.block(c0 / 16);
      for (int r = 0; r < a.rows; ++r) {
        const uint16_t* x = a.x + static_cast<size_t>(r) * static_cast<size_t>(a.kp);
        for (int l = 0; l < 16; ++l) {
          float acc = a.init ? a.init[r][c0 + l] : 0.0f;
          for (int p = 0; p < a.kp / 2; ++p) {
            const uint16_t* w = b + static_cast<size_t>(p) * 32 + static_cast<size_t>(l) * 2;
            acc = fma_rn(from_bf16(x[2 * p + 1]), from_bf16(w[1]), acc);
            acc = fma_rn(from_bf16(x[2 * p]), from_bf16(w[0]), acc);
          }
          a.out[r][c0 + l] = acc;
        }
      }
    }
}

}  // namespace lstmlm::kernels::bf16

namespace lstmlm::kernels::lowp {

std::unique_ptr<Gemm> make_bf16_gemm(Isa isa, const RowFn& row, int N, int K) {
  return std::make_unique<bf16::Gemm>(isa, row, N, K);
}

}  // namespace lstmlm::kernels::lowp
