// The generic cells' element-wise updates for avx512; the flags are in CMakeLists.txt.
#define LSTMLM_KERNEL_VARIANT cells_avx512
#include "kernels/cells/updates_impl.hpp"
