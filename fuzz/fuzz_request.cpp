// libFuzzer entry for fuzz/check_request.hpp.
#include "check_request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_request(data, size);
  return 0;
}
