// Text normalization of an input line before it is tokenized (`score --normalize`).
#pragma once
#include <string>
#include <string_view>

namespace lstmlm {

// Each mode follows Python 3.11 (Unicode 14.0, the version of the tokenizer's lowercasing), so text
// prepared in Python for a model gets the same bytes here:
//   None   the line unchanged
//   Lower  str.lower()
//   Nfkc   unicodedata.normalize("NFKC", line)
//   Ccnet  cc_net's text_normalizer.normalize(line) with its defaults: strip, lower, drop accents (NFD
//          without Mn), every Unicode digit to 0, its punctuation map, drop U+0000-001F and U+007F-009F
enum class Normalization { None, Lower, Nfkc, Ccnet };

// "none", "lower", "nfkc", "ccnet"; UsageError otherwise.
Normalization parse_normalization(std::string_view name);
const char* to_string(Normalization n);

// Throws InputError("invalid UTF-8 at byte N") on invalid UTF-8 (None returns any bytes unchanged).
std::string normalize(std::string_view utf8_line, Normalization n);

}  // namespace lstmlm
