// The fp32 kernels for AVX-512; the flags are in CMakeLists.txt.
#define LSTMLM_KERNEL_VARIANT fp32_avx512
#include "kernels/fp32/variant.hpp"
