// Any byte string as an ARPA file: a ModelError with a short message, or a model whose every unigram finds
// its id and whose scores are finite with a length within the order, from either start state.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "check.hpp"
#include "fuzz_file.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/ngram.hpp"

namespace lstmlm::fuzz {

inline void check_arpa(const uint8_t* data, size_t size) {
  MemFile f(data, size);
  try {
    auto m = NgramModel::load(f.path());
    require(m->order() >= 1 && m->order() <= kMaxNgramOrder, "arpa: order out of range");
    NgramState states[2] = {m->begin_sentence(), m->null_context()};
    for (uint32_t id = 0; id < m->vocab_size() && id < 64; ++id) {
      require(m->find(m->word(id)) == id, "arpa: a unigram does not find its id");
      for (auto& s : states) {
        const NgramScore sc = m->score(s, id, s);
        require(std::isfinite(sc.log10prob), "arpa: a score is not finite");
        require(sc.length >= 1 && sc.length <= m->order(), "arpa: an n-gram length out of [1, order]");
        require(s.words.size() <= static_cast<size_t>(m->order() - 1), "arpa: a state longer than order - 1");
      }
    }
  } catch (const ModelError& e) {
    require_short(e);
  }
}

}  // namespace lstmlm::fuzz
