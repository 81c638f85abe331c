// Any byte string as config.json: a ModelError or a config whose sizes are all valid.
#include <cstdint>
#include <cstdlib>

#include "fuzz_file.hpp"
#include "lstmlm/config.hpp"
#include "lstmlm/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::MemFile f(data, size);
  try {
    auto c = lstmlm::load_config(f.path());
    if (c.vocab_size <= 0 || c.embedding_dim < 0 || c.layers.empty()) std::abort();
    for (const auto& l : c.layers)
      if (l.hidden_size <= 0 || l.proj_size < 0) std::abort();
    (void)lstmlm::config_to_json(c).dump();
  } catch (const lstmlm::ModelError&) {
  }
  return 0;
}
