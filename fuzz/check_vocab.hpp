// Any byte string as vocab.json: a ModelError or a vocabulary whose every token round-trips through find.
#pragma once
#include <cstddef>
#include <cstdint>

#include "check.hpp"
#include "fuzz_file.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/vocab.hpp"

namespace lstmlm::fuzz {

inline void check_vocab(const uint8_t* data, size_t size) {
  MemFile f(data, size);
  try {
    auto v = Vocab::load(f.path());
    for (int32_t i = 0; i < v.size(); ++i) {
      auto id = v.find(v.token(i));
      require(id && *id <= i, "vocab: a token does not find its first id");  // first occurrence owns the id
    }
  } catch (const ModelError& e) {
    require_short(e);
  }
}

}  // namespace lstmlm::fuzz
