// The fp32 backend at one kernel level (Avx512, Avx2 or Scalar; the variant files of kernels.hpp).
#pragma once
#include "kernels/backend.hpp"
#include "kernels/cpu.hpp"

namespace lstmlm::kernels::fp32 {

// The backend whose kernels are `isa`'s; the caller checks that the CPU has it (registry.cpp). Throws
// std::logic_error for a level fp32 has no kernels for (Dot, Amx).
const Backend& backend_at(Isa isa);

}  // namespace lstmlm::kernels::fp32
