// A range of output columns of a low-precision GEMM (lowp/gemm.hpp). Alone so that the ISA-specific
// kernel files, compiled with their own flags, include nothing with out-of-line code.
#pragma once

namespace lstmlm::kernels::lowp {

struct Cols {
  int begin = 0, end = 0;  // multiples of 16
};

}  // namespace lstmlm::kernels::lowp
