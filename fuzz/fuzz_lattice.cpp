// libFuzzer entry for fuzz/check_lattice.hpp (the property is there, shared with the regression test).
#include "check_lattice.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::check_lattice(data, size);
  return 0;
}
