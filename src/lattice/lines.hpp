// The lines of a lattice file that may be gzip-compressed (zlib reads a plain file as it is), one at a
// time, each without its line end, with its 1-based number, in bounded memory.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace lstmlm::lattice {

// Longer lines are refused: an SLF link or a Kaldi arc is a few dozen bytes, a long one is not a lattice.
inline constexpr size_t kMaxLatticeLineBytes = size_t{1} << 20;

class Lines {
 public:
  // "-" is stdin. Throws InputError naming `path` when it cannot be opened.
  explicit Lines(const std::string& path);
  ~Lines();
  Lines(const Lines&) = delete;
  Lines& operator=(const Lines&) = delete;

  // The next line ("\r\n" or "\n" stripped); false at the end. Throws InputError "PATH:LINE: ..." for a
  // line past kMaxLatticeLineBytes, a NUL byte, or a read error (a corrupt gzip stream).
  bool next(std::string_view& line);
  uint64_t number() const { return number_; }
  uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  bool fill();
  std::string path_;
  void* file_ = nullptr;  // gzFile
  std::string buffer_;
  size_t begin_ = 0, end_ = 0;
  std::string line_;
  uint64_t number_ = 0, bytes_ = 0;
  bool eof_ = false;
};

}  // namespace lstmlm::lattice
