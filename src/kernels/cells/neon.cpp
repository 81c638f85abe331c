// The generic cells' element-wise updates for aarch64's NEON; the flags are in CMakeLists.txt.
#define LSTMLM_KERNEL_VARIANT cells_neon
#include "kernels/cells/updates_impl.hpp"
