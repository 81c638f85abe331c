// Any byte string as weights.safetensors: either a ModelError or tensors that read back within their ranges.
#include <cstdint>
#include <cstdlib>

#include "fuzz_file.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::MemFile f(data, size);
  try {
    auto st = lstmlm::SafetensorsFile::open(f.path());
    for (const auto& t : st.tensors()) {
      auto v = st.read_f32(t);
      uint64_t n = 1;
      for (auto d : t.shape) n *= static_cast<uint64_t>(d);
      if (v.size() != n) std::abort();  // a tensor must read back whole
    }
  } catch (const lstmlm::ModelError&) {
  }
  return 0;
}
