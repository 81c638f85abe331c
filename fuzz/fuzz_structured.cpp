// libFuzzer entry for fuzz/check_structured.hpp (deep nesting and size lies, expanded from a short program).
#include "check_structured.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_structured(data, size);
  return 0;
}
