// The body of each fp32 variant file: after the file has named its variant (LSTMLM_KERNEL_VARIANT, one
// of the namespaces kernels.hpp declares), this defines that variant's kernels() from the code below,
// compiled with the file's flags.
#pragma once
#ifndef LSTMLM_KERNEL_VARIANT
#error "a variant file defines LSTMLM_KERNEL_VARIANT before including kernels/fp32/variant.hpp"
#endif
#include "kernels/cell.hpp"
#include "kernels/fp32/kernels.hpp"
#include "kernels/fp32/lstm_step.hpp"
#include "kernels/fp32/tiles.hpp"

namespace lstmlm::kernels::fp32::LSTMLM_KERNEL_VARIANT {

namespace {

void lstm_rows_isa(int rows, const float* const* h_prev, const float* const* init, float* const* c,
                   float* const* m, const PackedMat& w_hh, const CellParams& cell, int part, int parts) {
  fp32::lstm_rows(rows, h_prev, init, c, m, w_hh, cell, part, parts);
}

void gemm_rows_isa(int rows, const float* const* a, const float* const* init, float* const* out,
                   const PackedMat& w, int part, int parts) {
  fp32::gemm_rows(rows, a, init, out, w, part, parts);
}

float log_sum_exp_isa(const float* x, int n) { return kernels::log_sum_exp(x, n); }

}  // namespace

const Kernels& kernels() {
  static const Kernels k{simd::kIsa, &lstm_rows_isa, &gemm_rows_isa, &log_sum_exp_isa};
  return k;
}

}  // namespace lstmlm::kernels::fp32::LSTMLM_KERNEL_VARIANT
