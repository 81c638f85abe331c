// The fp32 kernels on WebAssembly SIMD128 (the WebAssembly build only: web/wasm.cmake gives it
// LSTMLM_SIMD_WASM). No fused multiply-add there: a multiply then an add, so its bits are the WebAssembly
// bit set, not the native one (docs/web.md); LSTMLM_ISA=scalar runs scalar.cpp, the native bits.
#define LSTMLM_KERNEL_VARIANT fp32_wasm
#include "kernels/fp32/variant.hpp"
