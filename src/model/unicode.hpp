// UTF-8 decoding/encoding and Python-compatible lowercasing (the tokenizer's text layer).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lstmlm::model {

struct CaseMapping {
  char32_t from, to;
};
struct CodeRange {
  char32_t first, last;
};
// Generated tables (src/model/lowercase_table.cpp, tools/gen_lowercase_table.py).
extern const CaseMapping kLowerSingle[];
extern const size_t kLowerSingleCount;
extern const CodeRange kCasedRanges[];
extern const size_t kCasedRangesCount;
extern const CodeRange kCaseIgnorableRanges[];
extern const size_t kCaseIgnorableRangesCount;

// Strict UTF-8 decoding (no overlongs, no surrogates, nothing above U+10FFFF). On failure returns
// nullopt and sets *bad_offset to the byte offset of the first invalid sequence.
std::optional<std::u32string> decode_utf8(std::string_view s, size_t* bad_offset);
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view s);

// Exactly Python 3's str.lower() (Unicode of the generating Python, final sigma included).
std::u32string lowercase(std::u32string_view s);

// Python's str.isspace() set: what str.split() without an argument splits on.
bool is_python_space(char32_t cp);

}  // namespace lstmlm::model
