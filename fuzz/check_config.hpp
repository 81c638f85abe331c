// Any byte string as config.json: a ModelError or a config whose sizes are all valid.
#pragma once
#include <cstddef>
#include <cstdint>

#include "check.hpp"
#include "fuzz_file.hpp"
#include "lstmlm/config.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::fuzz {

inline void check_config(const uint8_t* data, size_t size) {
  MemFile f(data, size);
  try {
    auto c = load_config(f.path());
    require(c.vocab_size > 0 && c.embedding_dim >= 0 && !c.layers.empty(), "config: invalid sizes accepted");
    for (const auto& l : c.layers)
      require(l.hidden_size > 0 && l.proj_size >= 0, "config: invalid layer sizes accepted");
    (void)config_to_json(c).dump();
  } catch (const ModelError& e) {
    require_short(e);
  }
}

}  // namespace lstmlm::fuzz
