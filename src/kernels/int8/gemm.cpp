// int8 weights quantized and packed once (int8.hpp), input rows quantized per call, one kernel per ISA.
#include "kernels/lowp/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/int8/int8.hpp"

namespace lstmlm::kernels::int8 {

namespace {

using lowp::Cols;

// q = round(v * 127 / max|v|) in [-127, 127], returns the scale max|v| / 127 (0 for an all-zero row; NaN,
// with q = 0, when v holds a NaN or an infinity, so the results it enters become NaN).
float quantize(const float* v, int n, int8_t* q) {
  // max|v| on the bits: for non-negative floats the integer order is the float order, and an infinity or
  // NaN is at least 0x7f800000. Integer reductions vectorise where a float max would not (IEEE order).
  uint32_t amax_bits = 0;
  for (int k = 0; k < n; ++k) {
    uint32_t u;
    std::memcpy(&u, v + k, sizeof u);
    amax_bits = std::max(amax_bits, u & 0x7fffffffu);
  }
  if (amax_bits >= 0x7f800000u) {
    std::fill(q, q + n, int8_t{0});
    return NAN;
  }
  float amax;
  std::memcpy(&amax, &amax_bits, sizeof amax);
  if (amax == 0.0f) {
    std::fill(q, q + n, int8_t{0});
    return 0.0f;
  }
  const float inv = 127.0f / amax;
  for (int k = 0; k < n; ++k)
    q[k] = static_cast<int8_t>(std::clamp(std::nearbyint(v[k] * inv), -127.0f, 127.0f));
  return amax / 127.0f;
}

class Gemm final : public lowp::Gemm {
 public:
  Gemm(Isa isa, const lowp::RowFn& row, int N, int K)
      : lowp::Gemm(N, K), kp_(round_up(std::max(K, 1), kDepthAlign)), kernel_(pick(isa)) {
    const int padded = padded_out();
    w_.assign(static_cast<size_t>(padded) * static_cast<size_t>(kp_), 0);
    sw_.assign(static_cast<size_t>(padded), 0.0f);
    comp_.assign(static_cast<size_t>(padded), 0);
    std::vector<int8_t> q(static_cast<size_t>(K));
    for (int n = 0; n < N; ++n) {
      const float* r = row(n);
      if (!r) continue;
      sw_[size_t(n)] = quantize(r, K, q.data());
      int8_t* b = w_.data() + static_cast<size_t>(n / 16) * static_cast<size_t>(kp_) * 16;
      int32_t sum = 0;
      for (int k = 0; k < K; ++k) {
        b[static_cast<size_t>(k / 4) * 64 + size_t(n % 16) * 4 + size_t(k % 4)] = q[size_t(k)];
        sum += q[size_t(k)];
      }
      comp_[size_t(n)] = 128 * sum;
    }
  }

  void multiply(int rows, const float* const* x, const float* const* init, float* const* out,
                const Cols* cols, int n, Scratch& s) const override {
    if (rows <= 0) return;
    // Under 4 rows of at most 128 inputs, an AMX pass is mostly tile set-up and stores: VNNI (the same
    // exact sums, so the same bits) ran SEED predict at batch 1 ~10% faster on a Sapphire Rapids Xeon;
    // at K 650 (MEDIUM) AMX stayed ahead even at batch 1.
    const Kernel kernel = kernel_ == &dot_amx && rows < 4 && kp_ <= 128 ? &dot_vnni : kernel_;
    const size_t padded = static_cast<size_t>(round_up(rows, 16)) * static_cast<size_t>(kp_);
    int8_t* xq = lowp::input_rows<int8_t>(s, rows, K_, kp_, static_cast<size_t>(rows) * sizeof(float));
    auto* sx = reinterpret_cast<float*>(s.bytes.data() + padded);
    for (int r = 0; r < rows; ++r)
      sx[r] = quantize(x[r], K_, xq + static_cast<size_t>(r) * static_cast<size_t>(kp_));
    Args a;
    a.rows = rows;
    a.kp = kp_;
    a.x = xq;
    a.sx = sx;
    a.w = w_.data();
    a.sw = sw_.data();
    a.comp = comp_.data();
    a.init = init;
    a.out = out;
    a.cols = cols;
    a.n = n;
    kernel(a);
  }
  size_t bytes() const override {
    return w_.size() + sw_.size() * sizeof(float) + comp_.size() * sizeof(int32_t);
  }

 private:
  using Kernel = void (*)(const Args&);
  static Kernel pick(Isa isa) {
    switch (isa) {
      case Isa::Amx:
        return &dot_amx;
      case Isa::Dot:
        return &dot_vnni;
      case Isa::Avx512:
      case Isa::Avx2:
        return &dot_avx2;
      default:
        return &dot_scalar;
    }
  }
  int kp_;
  Kernel kernel_;
  std::vector<int8_t, AlignedAllocator<int8_t>> w_;
  FloatBuf sw_;
  std::vector<int32_t, AlignedAllocator<int32_t>> comp_;
};

}  // namespace

void dot_scalar(const Args& a) {
  for (int q = 0; q < a.n; ++q)
    for (int c0 = a.cols[q].begin; c0 < a.cols[q].end; c0 += 16) {
      const int8_t* b = a.block(c0 / 16);
      for (int r = 0; r < a.rows; ++r) {
        const int8_t* x = a.x + static_cast<size_t>(r) * static_cast<size_t>(a.kp);
        for (int l = 0; l < 16; ++l) {
          int32_t acc = 0;
          for (int k = 0; k < a.kp; ++k)
            acc += int32_t{x[k]} * b[static_cast<size_t>(k / 4) * 64 + size_t(l) * 4 + size_t(k % 4)];
          const float init = a.init ? a.init[r][c0 + l] : 0.0f;
          a.out[r][c0 + l] = std::fma(static_cast<float>(acc), a.sx[r] * a.sw[c0 + l], init);
        }
      }
    }
}

}  // namespace lstmlm::kernels::int8

namespace lstmlm::kernels::lowp {

std::unique_ptr<Gemm> make_int8_gemm(Isa isa, const RowFn& row, int N, int K) {
  return std::make_unique<int8::Gemm>(isa, row, N, K);
}

}  // namespace lstmlm::kernels::lowp
