// libFuzzer entry for fuzz/check_charsmap.hpp (the property is there, shared with the regression test).
#include "check_charsmap.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_charsmap(data, size);
  return 0;
}
