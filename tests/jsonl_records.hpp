// The records of a jsonl output: one JSON value per line, every line terminated.
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lstmlm::test {

inline std::vector<nlohmann::json> jsonl_records(const std::string& out) {
  std::vector<nlohmann::json> v;
  size_t a = 0;
  while (a < out.size()) {
    size_t b = out.find('\n', a);
    EXPECT_NE(b, std::string::npos) << "unterminated last record";
    if (b == std::string::npos) break;
    v.push_back(nlohmann::json::parse(out.substr(a, b - a)));
    a = b + 1;
  }
  return v;
}

}  // namespace lstmlm::test
