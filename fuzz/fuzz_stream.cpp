// libFuzzer entry for fuzz/check_stream.hpp.
#include "check_stream.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_stream(data, size);
  return 0;
}
