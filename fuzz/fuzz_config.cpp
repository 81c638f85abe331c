// libFuzzer entry for fuzz/check_config.hpp (the property is there, shared with the regression test).
#include "check_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_config(data, size);
  return 0;
}
