// The lines of an ARPA file, gzip-compressed or not: format::TextLines with an ARPA line's bound, its
// errors as the model errors of a model file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "format/text_lines.hpp"

namespace lstmlm::ngram {

inline constexpr size_t kMaxArpaLineBytes = size_t{1} << 16;

class LineSource {
 public:
  // Throws ModelError naming `path` when it cannot be opened.
  explicit LineSource(const std::string& path);
  // The next line; false at the end. Throws ModelError "<path>: line N: ..." for a line longer than
  // kMaxArpaLineBytes, a NUL byte, or a read error (a corrupt gzip stream).
  bool next(std::string_view& line);
  uint64_t number() const { return lines_->number(); }

 private:
  std::string path_;
  std::unique_ptr<format::TextLines> lines_;
};

}  // namespace lstmlm::ngram
