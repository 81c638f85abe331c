// The fp32 backend compiled for this build's ISA.
#pragma once
#include "kernels/backend.hpp"

namespace lstmlm::kernels::fp32 {

const Backend& native_backend();

}  // namespace lstmlm::kernels::fp32
