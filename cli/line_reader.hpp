// Reads input lines from files or stdin ("-"): strips a UTF-8 BOM at the start of each file and the
// line end (LF or CRLF). A file that cannot be opened is an InputError naming it.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace lstmlm::cli {

class LineReader {
 public:
  // paths empty: stdin only.
  explicit LineReader(std::vector<std::string> paths);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Next line of the current file, or false at the end of the current file (then call next_file()).
  bool next(std::string& line);
  // Up to `max` next lines of the current file into `lines` (cleared first); `first` gets the line number
  // of lines[0]. Returns false when the current file had no line left.
  bool next_block(std::vector<std::string>& lines, size_t max, uint64_t& first);
  // Opens the next file; false when there is none.
  bool next_file();
  const std::string& source() const { return source_; }
  uint64_t line_number() const { return line_; }  // of the last line returned

 private:
  std::vector<std::string> paths_;
  size_t index_ = 0;
  std::FILE* f_ = nullptr;
  std::string source_;
  uint64_t line_ = 0;
  bool eof_ = false;  // the current file has returned its last line (a tty's EOF is not read twice)
};

// Opens every path once up front so that a missing file fails before any output is written.
void check_readable(const std::vector<std::string>& paths);

}  // namespace lstmlm::cli
