// What the lattice readers share: the message of a bad line, fields split on blanks, numbers.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/lattice.hpp"

namespace lstmlm::lattice {

// InputError "SOURCE:LINE: lattice 'KEY': WHAT" (the key left out while it is not known).
[[noreturn]] void fail(const std::string& source, uint64_t line, const std::string& key,
                       const std::string& what);

std::vector<std::string_view> split_blanks(std::string_view line);
std::string_view trim_blanks(std::string_view s);

// A finite double, else nullopt-like false; `v` is set only on success.
bool parse_real(std::string_view s, double& v);
// A non-negative integer below `limit`.
bool parse_index(std::string_view s, int64_t limit, int64_t& v);

// Reading one lattice of each form from its lines; false when the input holds no more lattices.
class Lines;
bool read_kaldi(Lines& in, const SymbolTable* symbols, int64_t max_arcs, Lattice& out);
bool read_slf(Lines& in, int64_t max_arcs, Lattice& out);

}  // namespace lstmlm::lattice
