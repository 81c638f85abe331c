// The lines of a text file that may be gzip-compressed (zlib reads a plain file as it is), one at a time,
// each without its line end, with its 1-based number, in bounded memory.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace lstmlm::ngram {

inline constexpr size_t kMaxArpaLineBytes = size_t{1} << 16;

class LineSource {
 public:
  // Throws ModelError naming `path` when it cannot be opened.
  explicit LineSource(const std::string& path);
  ~LineSource();
  LineSource(const LineSource&) = delete;
  LineSource& operator=(const LineSource&) = delete;

  // The next line ("\r\n" or "\n" stripped); false at the end. Throws ModelError "<path>: line N: ..." for
  // a line longer than kMaxArpaLineBytes, a NUL byte, or a read error (a corrupt gzip stream).
  bool next(std::string_view& line);
  uint64_t number() const { return number_; }

 private:
  bool fill();
  std::string path_;
  void* file_ = nullptr;  // gzFile
  std::string buffer_;
  size_t begin_ = 0, end_ = 0;
  std::string line_;
  uint64_t number_ = 0;
  bool eof_ = false;
};

}  // namespace lstmlm::ngram
