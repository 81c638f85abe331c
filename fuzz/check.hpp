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

}  // namespace lstmlm::fuzz
