// What emscripten 3.1.6's libc++ (14) lacks of C++20 and the library uses: std::from_chars and std::to_chars
// for float and double, std::bit_cast. Force-included in the WebAssembly build only (web/wasm.cmake).
// from_chars reads what the standard's does with chars_format::general (no leading whitespace or '+', no
// hexadecimal; "inf" and "nan" accepted), through strtod; to_chars writes the shortest digits that read back
// the same value, as the standard's, found through snprintf. Both in the C locale, emscripten's only one.
#pragma once
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#if defined(_LIBCPP_VERSION) && _LIBCPP_VERSION < 170000
namespace lstmlm::wasm_compat {

template <class T>
std::from_chars_result parse_real(const char* first, const char* last, T& value) {
  const char* p = first;
  if (p != last && *p == '-') ++p;
  const bool hex = last - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
  if (p == last || hex ||
      !((*p >= '0' && *p <= '9') || *p == '.' || *p == 'i' || *p == 'I' || *p == 'n' || *p == 'N'))
    return {first, std::errc::invalid_argument};
  const std::string text(first, last);
  char* end = nullptr;
  errno = 0;
  const T v = sizeof(T) == sizeof(float) ? static_cast<T>(std::strtof(text.c_str(), &end))
                                         : static_cast<T>(std::strtod(text.c_str(), &end));
  if (end == text.c_str()) return {first, std::errc::invalid_argument};
  const char* stop = first + (end - text.c_str());
  if (errno == ERANGE) return {stop, std::errc::result_out_of_range};
  value = v;
  return {stop, std::errc()};
}

// The shortest "%.*e" (scientific) or "%.*f" (fixed) text of v that reads back as v.
template <class T>
std::string shortest(T v, bool scientific) {
  char buf[400];
  for (int p = 0; p < (scientific ? 17 : 340); ++p) {
    std::snprintf(buf, sizeof buf, scientific ? "%.*e" : "%.*f", p, static_cast<double>(v));
    const T back = sizeof(T) == sizeof(float) ? static_cast<T>(std::strtof(buf, nullptr))
                                              : static_cast<T>(std::strtod(buf, nullptr));
    if (back == v) break;
  }
  return buf;
}

template <class T>
std::to_chars_result format_real(char* first, char* last, T v, std::chars_format fmt) {
  std::string s;
  if (v != v || v - v != 0) {
    s = v != v ? (std::signbit(v) ? "-nan" : "nan") : (v < 0 ? "-inf" : "inf");
  } else if (fmt == std::chars_format::scientific) {
    s = shortest(v, true);
  } else if (fmt == std::chars_format::fixed) {
    s = shortest(v, false);
  } else {
    const std::string sci = shortest(v, true), fixed = shortest(v, false);
    s = fixed.size() <= sci.size() ? fixed : sci;
  }
  if (static_cast<size_t>(last - first) < s.size()) return {last, std::errc::value_too_large};
  std::memcpy(first, s.data(), s.size());
  return {first + s.size(), std::errc()};
}

}  // namespace lstmlm::wasm_compat

namespace std {
inline from_chars_result from_chars(const char* first, const char* last, double& value) {
  return lstmlm::wasm_compat::parse_real(first, last, value);
}
inline from_chars_result from_chars(const char* first, const char* last, float& value) {
  return lstmlm::wasm_compat::parse_real(first, last, value);
}
inline to_chars_result to_chars(char* first, char* last, double v,
                                chars_format fmt = chars_format::scientific | chars_format::fixed) {
  return lstmlm::wasm_compat::format_real(first, last, v, fmt);
}
inline to_chars_result to_chars(char* first, char* last, float v,
                                chars_format fmt = chars_format::scientific | chars_format::fixed) {
  return lstmlm::wasm_compat::format_real(first, last, v, fmt);
}
#if !defined(__cpp_lib_bit_cast)
template <class To, class From>
constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}
#endif
}  // namespace std
#endif
