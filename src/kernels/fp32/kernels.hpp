// The fp32 kernels of one ISA, as the layers (lstm.cpp, linear.cpp) call them: the same code compiled
// three times, once per variant file (avx512.cpp, avx2.cpp, scalar.cpp, each with its own flags in
// CMakeLists.txt), so one binary carries them all and the registry calls the best the CPU has. The layers
// pack and own the weights in plain code; only these functions hold instructions of a higher ISA.
#pragma once
#include "kernels/cell.hpp"
#include "kernels/fp32/panels.hpp"

namespace lstmlm::kernels::fp32 {

struct Kernels {
  const char* isa;  // "avx512", "avx2", "neon", "simd128", "scalar"
  // gates = init[r] + h_prev[r] W_hh^T, then the cell update: c[r] in place, m[r] = o act(c), for the
  // units of part `part` of `parts` of w_hh's panels (tiles.hpp's panel_range).
  void (*lstm_rows)(int rows, const float* const* h_prev, const float* const* init, float* const* c,
                    float* const* m, const PackedMat& w_hh, const CellParams& cell, int part, int parts);
  // out[r] = init[r] + a[r] W for the columns of part `part` of `parts` of w's panels.
  void (*gemm_rows)(int rows, const float* const* a, const float* const* init, float* const* out,
                    const PackedMat& w, int part, int parts);
  LogSumExp (*log_sum_exp)(const float* x, int n);
};

// One per variant file; a variant's instructions run only where cpu_features() has its ISA.
namespace fp32_avx512 {
const Kernels& kernels();
}
namespace fp32_avx2 {
const Kernels& kernels();
}
namespace fp32_neon {  // aarch64
const Kernels& kernels();
}
namespace fp32_wasm {  // WebAssembly SIMD128
const Kernels& kernels();
}
namespace fp32_scalar {
const Kernels& kernels();
}

}  // namespace lstmlm::kernels::fp32
