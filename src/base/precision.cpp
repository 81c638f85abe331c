#include "lstmlm/precision.hpp"

#include <string>

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::Bf16:
      return "bf16";
    case Precision::Int8:
      return "int8";
    case Precision::Fp32:
      break;
  }
  return "fp32";
}

bool find_precision(std::string_view name, Precision& out) {
  for (Precision p : kPrecisions)
    if (precision_name(p) == name) {
      out = p;
      return true;
    }
  return false;
}

Precision parse_precision(std::string_view name) {
  Precision p{};
  if (!find_precision(name, p))
    throw UsageError("precision '" + printable(name, 64) + "' is not available (use fp32, bf16 or int8)");
  return p;
}

}  // namespace lstmlm
