// The precision the kernels compute in: a kind parsed once where a user names it (a CLI option, a Python
// argument), then passed as this enum, never compared as a string.
#pragma once
#include <cstdint>
#include <string_view>

namespace lstmlm {

// Fp32 is the default and the numerics contract; Bf16 and Int8 are opt-in (docs/precision.md).
enum class Precision : uint8_t { Fp32, Bf16, Int8 };

inline constexpr Precision kPrecisions[] = {Precision::Fp32, Precision::Bf16, Precision::Int8};

// "fp32", "bf16", "int8".
std::string_view precision_name(Precision p);
// Sets `out` to the precision `name` names and returns true; false when it names none.
bool find_precision(std::string_view name, Precision& out);
// The precision of a name; UsageError "precision 'x' is not available (use fp32, bf16 or int8)" otherwise.
Precision parse_precision(std::string_view name);

}  // namespace lstmlm
