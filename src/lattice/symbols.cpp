// Kaldi's words.txt: "WORD ID" per line, as OpenFst's symbol tables are written.
#include <algorithm>

#include "lattice/lines.hpp"
#include "lattice/parse.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/lattice.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm {

std::shared_ptr<const SymbolTable> SymbolTable::load(const std::string& path) {
  auto t = std::make_shared<SymbolTable>();
  t->path_ = path;
  lattice::Lines in(path);
  std::string_view line;
  while (in.next(line)) {
    const auto f = lattice::split_blanks(line);
    if (f.empty()) continue;
    int64_t id = 0;
    if (f.size() != 2 || !lattice::parse_index(f[1], int64_t{1} << 31, id))
      throw InputError(path, in.number(),
                       "expected 'WORD ID' (a symbol table, words.txt), got '" + printable(line, 80) + "'");
    const std::string word(f[0]);
    if (!t->ids_.emplace(word, id).second)
      throw InputError(path, in.number(), "the word '" + printable(word, 80) + "' appears twice");
    if (!t->words_.emplace(id, word).second)
      throw InputError(path, in.number(), "the id " + std::to_string(id) + " appears twice");
    t->size_ = std::max(t->size_, id + 1);
  }
  if (t->words_.empty()) throw InputError(path + ": no 'WORD ID' line (an empty symbol table)");
  return t;
}

const std::string* SymbolTable::word(int64_t id) const {
  auto it = words_.find(id);
  return it == words_.end() ? nullptr : &it->second;
}

std::optional<int64_t> SymbolTable::id(const std::string& word) const {
  auto it = ids_.find(word);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace lstmlm
