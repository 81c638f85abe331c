// The generic cells' element-wise updates for avx2; the flags are in CMakeLists.txt.
#define LSTMLM_KERNEL_VARIANT cells_avx2
#include "kernels/cells/updates_impl.hpp"
