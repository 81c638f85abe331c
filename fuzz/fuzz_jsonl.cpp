// libFuzzer entry for fuzz/check_jsonl.hpp (the JSONL filter's line grammar and its near misses).
#include "check_jsonl.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_jsonl(data, size);
  return 0;
}
