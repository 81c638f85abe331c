// The generic cells' element-wise updates on WebAssembly SIMD128 (the WebAssembly build only: web/wasm.cmake
// gives it LSTMLM_SIMD_WASM), a multiply then an add where the other levels fuse them.
#define LSTMLM_KERNEL_VARIANT cells_wasm
#include "kernels/cells/updates_impl.hpp"
