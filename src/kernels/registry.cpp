// Which backend serves a precision. A new precision or ISA adds its backend here.
#include <string>

#include "kernels/backend.hpp"
#include "kernels/fp32/backend.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::kernels {

const Backend& backend(std::string_view precision) {
  if (precision == "fp32") return fp32::native_backend();
  throw UsageError("precision '" + std::string(precision) +
                   "' is not available in this build (available: fp32)");
}

}  // namespace lstmlm::kernels
