// Small helpers for hand-written JSON/TSV records: numbers with 9 significant digits (round-trips
// float32), strings escaped as JSON.
#pragma once
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace lstmlm::cli {

// %.9g; JSON has no infinities, so a non-finite value is written as null.
inline std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

inline std::string jstr(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lstmlm::cli
