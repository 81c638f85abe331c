// Any byte string as weights.safetensors: a ModelError or tensors that read back whole.
#pragma once
#include <cstddef>
#include <cstdint>

#include "check.hpp"
#include "fuzz_file.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/safetensors.hpp"

namespace lstmlm::fuzz {

inline void check_safetensors(const uint8_t* data, size_t size) {
  MemFile f(data, size);
  try {
    auto st = SafetensorsFile::open(f.path());
    for (const auto& t : st.tensors()) {
      require(t.begin <= t.end && t.end <= size, "safetensors: tensor range outside the file accepted");
      auto v = st.read_f32(t);
      uint64_t n = 1;
      for (auto d : t.shape) n *= static_cast<uint64_t>(d);
      require(v.size() == n, "safetensors: tensor read back with the wrong element count");
    }
  } catch (const ModelError& e) {
    require_short(e);
  }
}

}  // namespace lstmlm::fuzz
