// libFuzzer entry for fuzz/check_vocab.hpp (the property is there, shared with the regression test).
#include "check_vocab.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_vocab(data, size);
  return 0;
}
