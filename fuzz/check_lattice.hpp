// Any byte string as a lattice file (the first byte picks the form: even Kaldi text, odd SLF): an
// InputError with a short message, or checked lattices that write and read back with their arcs, and
// whose best path the search finds with one history per node.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "check.hpp"
#include "fuzz_file.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/lattice.hpp"
#include "lstmlm/tasks/lattice.hpp"

namespace lstmlm::fuzz {

inline void check_lattice(const uint8_t* data, size_t size) {
  if (size == 0) return;
  static const std::string kWords = "<eps> 0\na 1\nb 2\nc 3\n!NULL 4\n";
  MemFile words(reinterpret_cast<const uint8_t*>(kWords.data()), kWords.size());
  MemFile f(data + 1, size - 1);
  const bool slf = data[0] % 2 == 1;
  try {
    LatticeReadOptions opt{slf ? LatticeFormat::Slf : LatticeFormat::Kaldi, SymbolTable::load(words.path()),
                           4096};
    LatticeReader in(f.path(), opt);
    tasks::LatticeRescoreOptions ro;
    ro.max_tokens_per_node = 1;
    ro.weights = {1.0, 0.5};
    tasks::LatticeRescorer search(nullptr, ro);
    for (Lattice l; in.next(l);) {
      require(!search.rescore(l).nbest.empty(), "lattice: a checked lattice without a best path");
      const std::string text = write_slf_lattice(l);
      MemFile back(reinterpret_cast<const uint8_t*>(text.data()), text.size());
      LatticeReader again(back.path(), {LatticeFormat::Slf, nullptr, 1 << 20});
      Lattice b;
      require(again.next(b), "lattice: its SLF does not read back");
      require(b.arcs.size() == l.arcs.size() && b.states == l.states && b.finals.size() == l.finals.size(),
              "lattice: its SLF reads back with other arcs, states or finals");
    }
  } catch (const InputError& e) {
    require_short(e);
  }
}

}  // namespace lstmlm::fuzz
