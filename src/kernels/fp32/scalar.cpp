// The fp32 kernels without vector instructions (LSTMLM_ISA=scalar, CPUs without AVX2); flags in
// CMakeLists.txt.
#define LSTMLM_KERNEL_VARIANT fp32_scalar
#include "kernels/fp32/variant.hpp"
