// int8 weights quantized and packed once (int8.hpp), input rows quantized per call, one kernel per ISA.
#include "kernels/lowp/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/fma.hpp"
#include "kernels/int8/int8.hpp"

namespace lstmlm::kernels::int8 {

namespace {

using lowp::Cols;

// Kp's multiple at a level (int8.hpp).
constexpr int depth_align([[maybe_unused]] Isa isa) {
#if defined(__aarch64__)
  return isa == Isa::I8mm ? kDepthAlignI8mm : kDepthAlign;
#elif defined(__x86_64__)
  return isa == Isa::Amx ? kDepthAlignAmx : kDepthAlign;
#else
  return kDepthAlign;
#endif
}

// q = round(v * 127 / max|v|) in [-127, 127], returns the scale max|v| / 127 (0 for an all-zero row; NaN,
// with q = 0, when v holds a NaN or an infinity, so the results it enters become NaN). With offset 128, q
// is stored as the byte q + 128: vpdpbusd's unsigned operand (int8.hpp).
float quantize(const float* v, int n, int8_t* q, int offset = 0) {
  const auto stored = [offset](int value) {
    return static_cast<int8_t>(static_cast<uint8_t>(value + offset));
  };
  // max|v| on the bits: for non-negative floats the integer order is the float order, and an infinity or
  // NaN is at least 0x7f800000. Integer reductions vectorise where a float max would not (IEEE order).
  uint32_t amax_bits = 0;
  for (int k = 0; k < n; ++k) {
    uint32_t u;
    std::memcpy(&u, v + k, sizeof u);
    amax_bits = std::max(amax_bits, u & 0x7fffffffu);
  }
  if (amax_bits >= 0x7f800000u) {
    std::fill(q, q + n, stored(0));
    return NAN;
  }
  float amax;
  std::memcpy(&amax, &amax_bits, sizeof amax);
  if (amax == 0.0f) {
    std::fill(q, q + n, stored(0));
    return 0.0f;
  }
  const float inv = 127.0f / amax;
  for (int k = 0; k < n; ++k)
    q[k] = stored(static_cast<int>(std::clamp(std::nearbyint(v[k] * inv), -127.0f, 127.0f)));
  return amax / 127.0f;
}

// A row whose largest |w| exceeds kHeavyRow x its root mean square rounds all its other weights on a
// coarse step (max|w| / 127). The 16 rows of a block that holds one such row also get a second int8
// row each, the rounding residual of the first with its own scale, which leaves them about 15 bits.
// PyTorch's initialisation U(-a, a) has max / rms = sqrt(3), so random models have none; the trained
// models of ../shared/data have them in about half their rows, and so in nearly every block
// (docs/precision.md has the measurements that chose 3).
inline constexpr double kHeavyRow = 3.0;

bool heavy_row(const float* r, int K) {
  double ss = 0.0, mx = 0.0;
  for (int k = 0; k < K; ++k) {
    ss += double(r[k]) * double(r[k]);
    mx = std::max(mx, std::fabs(double(r[k])));
  }
  return mx * mx * K > kHeavyRow * kHeavyRow * ss;  // false for a zero row and for NaN or infinity
}

// int8 rows packed in int8.hpp's layout, with their scales and vpdpbusd offsets.
struct Plane {
  std::vector<int8_t, AlignedAllocator<int8_t>> w;
  FloatBuf sw;
  std::vector<int32_t, AlignedAllocator<int32_t>> comp;
  size_t kp;

  Plane(int rows, int depth)
      : w(static_cast<size_t>(round_up(rows, 16)) * static_cast<size_t>(depth), 0),
        sw(static_cast<size_t>(round_up(rows, 16)), 0.0f),
        comp(static_cast<size_t>(round_up(rows, 16)), 0),
        kp(static_cast<size_t>(depth)) {}
  void set(int n, float scale, const std::vector<int8_t>& q) {
    sw[size_t(n)] = scale;
    int8_t* b = w.data() + static_cast<size_t>(n / 16) * kp * 16;
    int32_t sum = 0;
    for (size_t k = 0; k < q.size(); ++k) {
      b[(k / 4) * 64 + size_t(n % 16) * 4 + k % 4] = q[k];
      sum += q[k];
    }
    comp[size_t(n)] = 128 * sum;
  }
  size_t bytes() const { return w.size() + sw.size() * sizeof(float) + comp.size() * sizeof(int32_t); }
  void point(Args& a) const {
    a.w = w.data();
    a.sw = sw.data();
    a.comp = comp.data();
  }
};

// The runs of consecutive blocks that hold a heavy row, as column ranges.
std::vector<Cols> heavy_blocks(const lowp::RowFn& row, int N, int K) {
  std::vector<Cols> runs;
  for (int n = 0; n < N; ++n) {
    const float* r = row(n);
    if (!r || !heavy_row(r, K)) continue;
    const int b = n / 16 * 16;
    if (!runs.empty() && runs.back().end >= b) {
      runs.back().end = b + 16;
    } else {
      runs.push_back({b, b + 16});
    }
    n = b + 15;  // on to the next block
  }
  return runs;
}

class Gemm final : public lowp::Gemm {
 public:
  Gemm(Isa isa, bool avx_vnni, const lowp::RowFn& row, int N, int K)
      : lowp::Gemm(N, K),
        kp_(round_up(std::max(K, 1), depth_align(isa))),
        kernel_(pick(isa, avx_vnni)),
        heavy_(heavy_blocks(row, N, K)),
        main_(N, kp_),
        residual_(heavy_.empty() ? 0 : N, kp_) {
    std::vector<int8_t> q(static_cast<size_t>(K));
    std::vector<float> v(static_cast<size_t>(K));
    size_t run = 0;
    for (int n = 0; n < N; ++n) {
      const float* r = row(n);
      if (!r) continue;
      const float scale = quantize(r, K, q.data());
      main_.set(n, scale, q);
      while (run < heavy_.size() && heavy_[run].end <= n) ++run;
      if (run == heavy_.size() || n < heavy_[run].begin) continue;
      // What the first row left (w - q scale, one rounding), quantized the same way.
      for (int k = 0; k < K; ++k) v[size_t(k)] = fma_rn(-static_cast<float>(q[size_t(k)]), scale, r[k]);
      residual_.set(n, quantize(v.data(), K, q.data()), q);
    }
  }

  // out = fma(float(acc), sx sw, init) (int8.hpp), and in a heavy block then
  // out = fma(float(acc2), sx sw2, out) with the residual row.
  void multiply(int rows, const float* const* x, const float* const* init, float* const* out,
                const Cols* cols, int n, Scratch& s) const override {
    if (rows <= 0) return;
      // Under 4 rows of at most 128 inputs, an AMX pass is mostly tile set-up and stores: VNNI (the same
      // exact sums, so the same bits) ran SEED predict at batch 1 ~10% faster on a Sapphire Rapids Xeon;
      // at K 650 (MEDIUM) AMX stayed ahead even at batch 1.
#if defined(__x86_64__)
    const Kernel kernel = kernel_ == &dot_amx && rows < 4 && kp_ <= 128 ? &dot_vnni : kernel_;
#else
    const Kernel kernel = kernel_;
#endif
    // s.bytes: the quantized rows (16-row blocks), sx, then the ranges of the residual pass.
    const size_t padded = static_cast<size_t>(round_up(rows, 16)) * static_cast<size_t>(kp_);
    const size_t cols_at = (padded + size_t(rows) * sizeof(float) + 63) / 64 * 64;
    const size_t most = heavy_.empty() ? 0 : size_t(n) + heavy_.size();  // ranges of an intersection
    int8_t* xq = lowp::input_rows<int8_t>(s, rows, K_, kp_, cols_at - padded + most * sizeof(Cols));
    auto* sx = reinterpret_cast<float*>(s.bytes.data() + padded);
    // The vpdpbusd kernels take x + 128; the padding past K stays 0, which meets zero weights either way.
#if defined(__x86_64__)
    const int offset = kernel == &dot_vnni || kernel == &dot_avxvnni ? 128 : 0;
#else
    const int offset = 0;
#endif
    for (int r = 0; r < rows; ++r)
      sx[r] = quantize(x[r], K_, xq + static_cast<size_t>(r) * static_cast<size_t>(kp_), offset);
    Args a;
    a.rows = rows;
    a.kp = kp_;
    a.x = xq;
    a.sx = sx;
    main_.point(a);
    a.init = init;
    a.out = out;
    a.cols = cols;
    a.n = n;
    kernel(a);
    if (heavy_.empty()) return;
    auto* both = reinterpret_cast<Cols*>(s.bytes.data() + cols_at);
    int m = 0;
    for (int q = 0; q < n; ++q)
      for (const Cols& h : heavy_) {
        const Cols c{std::max(cols[q].begin, h.begin), std::min(cols[q].end, h.end)};
        if (c.begin < c.end) both[m++] = c;
      }
    if (m == 0) return;
    residual_.point(a);
    a.init = out;
    a.cols = both;
    a.n = m;
    kernel(a);
  }
  size_t bytes() const override { return main_.bytes() + residual_.bytes() + heavy_.size() * sizeof(Cols); }

 private:
  using Kernel = void (*)(const Args&);
  static Kernel pick(Isa isa, [[maybe_unused]] bool avx_vnni) {
    switch (isa) {
#if defined(__aarch64__)
      case Isa::I8mm:
        return &dot_i8mm;
      case Isa::Dot:
        return &dot_sdot;
      case Isa::Neon:
        return &dot_neon;
#elif defined(__x86_64__)
      case Isa::Amx:
        return &dot_amx;
      case Isa::Dot:
        return &dot_vnni;
      case Isa::Avx512:
      case Isa::Avx2:
        return avx_vnni ? &dot_avxvnni : &dot_avx2;
#elif defined(__wasm_simd128__)
      case Isa::Simd128:
        return &dot_wasm;
#endif
      default:
        return &dot_scalar;
    }
  }
  int kp_;
  Kernel kernel_;
  std::vector<Cols> heavy_;  // the runs of heavy blocks, ascending; residual_ is empty without one
  Plane main_, residual_;
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
          a.out[r][c0 + l] = fma_rn(static_cast<float>(acc), a.sx[r] * a.sw[c0 + l], init);
        }
      }
    }
}

}  // namespace lstmlm::kernels::int8

namespace lstmlm::kernels::lowp {

std::unique_ptr<Gemm> make_int8_gemm(Isa isa, const RowFn& row, int N, int K) {
  return std::make_unique<int8::Gemm>(isa, cpu_features().avx_vnni, row, N, K);
}
std::unique_ptr<Gemm> make_int8_gemm_without_avx_vnni(Isa isa, const RowFn& row, int N, int K) {
  return std::make_unique<int8::Gemm>(isa, false, row, N, K);
}

}  // namespace lstmlm::kernels::lowp
