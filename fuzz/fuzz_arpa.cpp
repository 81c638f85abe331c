// libFuzzer entry for fuzz/check_arpa.hpp (the property is there, shared with the regression test).
#include "check_arpa.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_arpa(data, size);
  return 0;
}
