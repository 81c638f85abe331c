// The fp32 kernels for AVX2 and FMA; the flags are in CMakeLists.txt.
#define LSTMLM_KERNEL_VARIANT fp32_avx2
#include "kernels/fp32/variant.hpp"
