#include "lstmlm/text.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace lstmlm {

size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0Fu;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

std::string printable(std::string_view s, size_t max_bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() < max_bytes ? s.size() : max_bytes + 3);
  for (size_t i = 0; i < s.size();) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0 || c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

std::string format_g9(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
#if defined(__cpp_lib_to_chars)
  // The same text as %.9g (the standard defines it so), without printf's locale and varargs: a server
  // writes a dozen of these per answer.
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 9);
  return std::string(buf, r.ptr);
#else
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
#endif
}

}  // namespace lstmlm
