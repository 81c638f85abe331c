// The generic cells' element-wise updates for scalar; the flags are in CMakeLists.txt.
#define LSTMLM_KERNEL_VARIANT cells_scalar
#include "kernels/cells/updates_impl.hpp"
