// The fp32 kernels for aarch64's Advanced SIMD (NEON: fmla, the same fused multiply-add as x86's vfmadd,
// so every level gives the same bits); the flags are in CMakeLists.txt.
#define LSTMLM_KERNEL_VARIANT fp32_neon
#include "kernels/fp32/variant.hpp"
