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

const Kernels& kernels() {
  static const Kernels k{simd::kIsa, &fp32::lstm_rows, &fp32::gemm_rows, &kernels::log_sum_exp};
  return k;
}

}  // namespace lstmlm::kernels::fp32::LSTMLM_KERNEL_VARIANT
