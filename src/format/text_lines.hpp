// The lines of a text file that may be gzip-compressed (zlib reads a plain file as it is; "-" is stdin), one
// at a time, each without its line end ("\n", "\r\n"), with its 1-based number, in bounded memory: the
// reader of ARPA models and of lattices.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace lstmlm::format {

class TextLines {
 public:
  // `max_line`: the longest line taken (bytes); `kind` names what the file should be, for the messages of
  // a line too long or holding a NUL ("an ARPA file", "a lattice"). Throws InputError "PATH: cannot open:
  // ..." when it cannot be opened.
  TextLines(const std::string& path, size_t max_line, std::string kind);
  ~TextLines();
  TextLines(const TextLines&) = delete;
  TextLines& operator=(const TextLines&) = delete;

  // The next line; false at the end. Throws InputError(path, line, detail) for a line past max_line, a NUL
  // byte, or a read error (a corrupt or truncated gzip stream).
  bool next(std::string_view& line);
  uint64_t number() const { return number_; }  // of the last line returned
  uint64_t bytes() const { return bytes_; }    // decompressed bytes returned so far, line ends included
  const std::string& path() const { return path_; }

 private:
  bool fill();
  std::string path_, kind_;
  size_t max_line_;
  void* file_ = nullptr;  // gzFile
  std::string buffer_;
  size_t begin_ = 0, end_ = 0;
  std::string line_;
  uint64_t number_ = 0, bytes_ = 0;
  bool eof_ = false;
};

}  // namespace lstmlm::format
