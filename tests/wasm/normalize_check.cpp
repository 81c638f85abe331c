// The WebAssembly build's --normalize modes (src/model/normalize.cpp without ICU): prints what each mode
// gives for a line, or the UsageError it throws; normalize.test.js compares with the expected lines.
#include <cstdio>
#include <exception>

#include "lstmlm/error.hpp"
#include "lstmlm/normalize.hpp"

int main() {
  for (const char* mode : {"none", "lower", "nfkc", "ccnet"}) {
    try {
      std::printf("%s: %s\n", mode,
                  lstmlm::normalize("Ünïcode ÀB", lstmlm::parse_normalization(mode)).c_str());
    } catch (const lstmlm::UsageError& e) {
      std::printf("%s: error: %s\n", mode, e.what());
    }
  }
}
