// The precision the kernels compute in: a kind parsed once where a user names it (a CLI option, a Python
// argument), then passed as this enum, never compared as a string.
#pragma once
#include <cstdint>
#include <string_view>

namespace lstmlm {

// Fp32 is the default and the numerics contract; Bf16 and Int8 are opt-in (docs/precision.md).
enum class Precision : uint8_t { Fp32, Bf16, Int8 };

inline constexpr Precision kPrecisions[] = {Precision::Fp32, Precision::Bf16, Precision::Int8};

// Layer 0's input term per token (docs/architecture.md#layer-0s-input-term): Auto folds it into a table of V
// x G floats when that is no larger than the embedding and W_ih it replaces (or at most 4 MiB); Always keeps
// the table whatever its size (faster: no product per token; more memory), Never multiplies the embedding's
// rows by W_ih at every step. A one-hot model's table is W_ih itself: folded whatever this says. The two
// layouts round differently, so this is part of a model's bits, as the precision is.
enum class EmbeddingFold : uint8_t { Auto, Always, Never };

// "fp32", "bf16", "int8".
std::string_view precision_name(Precision p);
// Sets `out` to the precision `name` names and returns true; false when it names none.
bool find_precision(std::string_view name, Precision& out);
// The precision of a name; UsageError "precision 'x' is not available (use fp32, bf16 or int8)" otherwise.
Precision parse_precision(std::string_view name);

}  // namespace lstmlm
