// Bytes from a user or a file, made fit for a one-line message: the one escaper every layer uses, so the
// same byte reads the same in every diagnostic.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace lstmlm {

// The length of the well-formed UTF-8 sequence that starts at s[i] (1 to 4), or 0 when there is none:
// a continuation byte, a truncated sequence, an overlong form, a surrogate or a code point past U+10FFFF.
size_t utf8_sequence_length(std::string_view s, size_t i);

// `s` with control bytes (below 0x20, and 0x7f) and the bytes of ill-formed UTF-8 written as \xNN
// (lowercase hex); valid UTF-8 is kept, so a message never spans lines, moves the cursor or ends early at
// a NUL. Once the result holds `max_bytes` bytes, the rest is cut and "..." ends it.
std::string printable(std::string_view s, size_t max_bytes = std::string_view::npos);

// `v` with 9 significant digits (printf's %.9g): enough to read a float32 back exactly, the form every output
// format, the JSONL filter and the server's metrics write a number in ("nan", "inf", "-inf" when not finite;
// JSON writers put null there themselves).
std::string format_g9(double v);

}  // namespace lstmlm
