// Any byte string as vocab.json: a ModelError or a vocabulary whose every token round-trips through find.
#include <cstdint>
#include <cstdlib>

#include "fuzz_file.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/vocab.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lstmlm::fuzz::MemFile f(data, size);
  try {
    auto v = lstmlm::Vocab::load(f.path());
    for (int32_t i = 0; i < v.size(); ++i) {
      auto id = v.find(v.token(i));
      if (!id || *id > i) std::abort();  // the first occurrence of a token owns its id
    }
  } catch (const lstmlm::ModelError&) {
  }
  return 0;
}
