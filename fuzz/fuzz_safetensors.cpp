// libFuzzer entry for fuzz/check_safetensors.hpp (the property is there, shared with the regression test).
#include "check_safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_safetensors(data, size);
  return 0;
}
