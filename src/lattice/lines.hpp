// The lines of a lattice file, gzip-compressed or not ("-": stdin): format::TextLines with a lattice's
// bound on a line.
#pragma once
#include <cstddef>
#include <string>

#include "format/text_lines.hpp"

namespace lstmlm::lattice {

// Longer lines are refused: an SLF link or a Kaldi arc is a few dozen bytes, a long one is not a lattice.
inline constexpr size_t kMaxLatticeLineBytes = size_t{1} << 20;

class Lines : public format::TextLines {
 public:
  explicit Lines(const std::string& path) : TextLines(path, kMaxLatticeLineBytes, "a lattice") {}
};

}  // namespace lstmlm::lattice
