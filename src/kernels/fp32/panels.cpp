#include "kernels/fp32/panels.hpp"

namespace lstmlm::kernels::fp32 {

int gate_columns(int H) {
  const int t = H % kUnitBlock;
  return H / kUnitBlock * kPanel + round_up(kGates * t, kLanes);
}

PackedMat pack_gates(const Rows& w, int H, int K) {
  PackedMat p;
  p.K = K;
  p.N = p.Np = gate_columns(H);
  p.full = H / kUnitBlock;
  p.tail = (p.Np - p.full * kPanel) / kLanes;
  p.data.assign(static_cast<size_t>(p.Np) * p.K, 0.0f);
  for (int g = 0; g < kGates; ++g)
    for (int unit = 0; unit < H; ++unit) {
      const int col = gate_col(g, unit, H);
      const float* row = w.row(static_cast<size_t>(g * H + unit), static_cast<size_t>(K));
      for (int k = 0; k < K; ++k) p.data[p.index(col, k)] = row[k];
    }
  return p;
}

PackedMat pack_transposed(const Rows& m, int N, int K) {
  PackedMat p;
  p.K = K;
  p.N = N;
  p.full = N / kPanel;
  p.tail = round_up(N - p.full * kPanel, kLanes) / kLanes;
  p.Np = p.full * kPanel + p.tail * kLanes;
  p.data.assign(static_cast<size_t>(p.Np) * p.K, 0.0f);
  for (int j = 0; j < N; ++j) {
    const float* row = m.row(static_cast<size_t>(j), static_cast<size_t>(K));
    for (int k = 0; k < K; ++k) p.data[p.index(j, k)] = row[k];
  }
  return p;
}

}  // namespace lstmlm::kernels::fp32
