// Shared by the fuzz targets and tests/fuzz_regressions_test.cpp: a property that must hold for every
// input. A violation throws (libFuzzer reports the uncaught exception as a crash; the gtest fails).
#pragma once
#include <stdexcept>
#include <string>

namespace lstmlm::fuzz {

struct Violation : std::logic_error {
  using std::logic_error::logic_error;
};

inline void require(bool ok, const std::string& what) {
  if (!ok) throw Violation(what);
}

// A refusal is one short line: a message never dumps the offending value, however large it is.
inline void require_short(const std::exception& e) {
  std::string m = e.what();
  require(m.size() < 2048, "a refusal message of " + std::to_string(m.size()) + " bytes");
  require(m.find('\n') == std::string::npos, "a refusal message of more than one line");
}

}  // namespace lstmlm::fuzz
