#include "lattice/parse.hpp"

#include <charconv>
#include <cmath>

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::lattice {

void fail(const std::string& source, uint64_t line, const std::string& key, const std::string& what) {
  throw InputError(source, line, (key.empty() ? "" : "lattice '" + printable(key, 100) + "': ") + what);
}

std::vector<std::string_view> split_blanks(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string_view trim_blanks(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

bool parse_real(std::string_view s, double& v) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  double x = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), x);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(x)) return false;
  v = x;
  return true;
}

bool parse_index(std::string_view s, int64_t limit, int64_t& v) {
  int64_t x = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), x);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || x < 0 || x >= limit) return false;
  v = x;
  return true;
}

}  // namespace lstmlm::lattice
