// libFuzzer entry for fuzz/check_tokenizer.hpp (the property is there, shared with the regression test).
#include "check_tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_tokenizer(data, size);
  return 0;
}
