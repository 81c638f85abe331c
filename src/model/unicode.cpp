#include "model/unicode.hpp"

#include <algorithm>

namespace lstmlm::model {

std::optional<std::u32string> decode_utf8(std::string_view s, size_t* bad_offset) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  auto fail = [&](size_t at) -> std::optional<std::u32string> {
    if (bad_offset) *bad_offset = at;
    return std::nullopt;
  };
  while (i < s.size()) {
    auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    size_t n;
    char32_t cp, min;
    if ((b0 & 0xE0) == 0xC0)
      n = 2, cp = b0 & 0x1F, min = 0x80;
    else if ((b0 & 0xF0) == 0xE0)
      n = 3, cp = b0 & 0x0F, min = 0x800;
    else if ((b0 & 0xF8) == 0xF0)
      n = 4, cp = b0 & 0x07, min = 0x10000;
    else
      return fail(i);
    if (i + n > s.size()) return fail(i);
    for (size_t k = 1; k < n; ++k) {
      auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return fail(i);
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return fail(i);
    out.push_back(cp);
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) append_utf8(out, cp);
  return out;
}

namespace {

bool in_ranges(const CodeRange* r, size_t n, char32_t cp) {
  const CodeRange* end = r + n;
  auto it = std::upper_bound(r, end, cp, [](char32_t c, const CodeRange& x) { return c < x.first; });
  return it != r && cp <= (it - 1)->last;
}

bool is_ignorable(char32_t cp) { return in_ranges(kCaseIgnorableRanges, kCaseIgnorableRangesCount, cp); }
bool is_cased(char32_t cp) { return in_ranges(kCasedRanges, kCasedRangesCount, cp); }

// Unicode Final_Sigma as CPython's handle_capital_sigma checks it: a cased letter before (skipping
// case-ignorables) and none after (skipping case-ignorables).
bool final_sigma(std::u32string_view s, size_t i) {
  size_t j = i;
  while (j > 0 && is_ignorable(s[j - 1])) --j;
  if (j == 0 || !is_cased(s[j - 1])) return false;
  size_t k = i + 1;
  while (k < s.size() && is_ignorable(s[k])) ++k;
  return k == s.size() || !is_cased(s[k]);
}

}  // namespace

std::u32string lowercase(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const CaseMapping* begin = kLowerSingle;
  const CaseMapping* end = kLowerSingle + kLowerSingleCount;
  for (size_t i = 0; i < s.size(); ++i) {
    char32_t cp = s[i];
    if (cp < 0x80) {
      out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    } else if (cp == 0x3A3) {
      out.push_back(final_sigma(s, i) ? 0x3C2 : 0x3C3);
    } else if (cp == 0x130) {  // İ lowercases to two code points in Python: i + combining dot above
      out.push_back(U'i');
      out.push_back(0x307);
    } else {
      auto it = std::lower_bound(begin, end, cp, [](const CaseMapping& m, char32_t c) { return m.from < c; });
      out.push_back(it != end && it->from == cp ? it->to : cp);
    }
  }
  return out;
}

bool is_python_space(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

}  // namespace lstmlm::model
