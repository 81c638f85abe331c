// The generic cells' element-wise updates, lane-wise over 16 units at a time: the same code compiled once
// per ISA (avx512.cpp, avx2.cpp, scalar.cpp beside this file, each with its own flags), so one binary
// carries them all and updates() returns the best the CPU has, at most LSTMLM_ISA, the level the fp32
// kernels run at. Every operation is lane-wise (simd.hpp), so a unit's result is the same in any lane,
// tail or part of a split: the engine's batch and thread invariance holds.
#pragma once
#include "kernels/cell.hpp"

namespace lstmlm::kernels::cells {

// Units [begin, end) of `rows` rows. term: the input term (gate blocks of H); g: the recurrent product's
// gate blocks; h_prev null: the zero rows of a reset state; out: the rows written.
struct Rows {
  int rows = 0, H = 0, begin = 0, end = 0;
  const float* const* term = nullptr;
  const float* const* g = nullptr;
  const float* const* h_prev = nullptr;
  float* const* out = nullptr;
};

struct Updates {
  const char* isa;
  // GRU, reset after the product: g = W_hh h + b_hh (r z n); out = h'.
  void (*gru_after)(const Rows& a, RecurrentActivation rec, Activation act);
  // GRU, reset before it: out = r * h_prev (the input of W_hn) ...
  void (*gru_reset)(const Rows& a, RecurrentActivation rec);
  // ... then, with gn = W_hn (r h), out = h'. g holds the r and z blocks.
  void (*gru_before)(const Rows& a, const float* const* gn, RecurrentActivation rec, Activation act);
  // Simple RNN: out = act(term + g).
  void (*rnn)(const Rows& a, Activation act);
  // LSTM with peepholes (ci, cf, co: [H], null for none): c updated in place, out = o act(c).
  void (*lstm)(const Rows& a, float* const* c, const CellParams& cell, const float* ci, const float* cf,
               const float* co);
  // x clipped to [-clip, clip], lanes [begin, end) of each row.
  void (*clip)(int rows, float* const* x, int begin, int end, float clip);
};

const Updates& updates();

namespace cells_avx512 {
const Updates& updates();
}
namespace cells_avx2 {
const Updates& updates();
}
namespace cells_neon {  // aarch64
const Updates& updates();
}
namespace cells_wasm {  // WebAssembly SIMD128
const Updates& updates();
}
namespace cells_scalar {
const Updates& updates();
}

}  // namespace lstmlm::kernels::cells
