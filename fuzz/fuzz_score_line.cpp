// libFuzzer entry for fuzz/check_score_line.hpp (the property is there, shared with the regression test).
#include "check_score_line.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_score_line(data, size);
  return 0;
}
