// Reads input lines from files or stdin ("-"): strips a UTF-8 BOM at the start of each file and the
// line end (LF or CRLF). A file that cannot be opened is an InputError naming it; so is a line longer
// than the limit (kMaxLineBytes, cli/limits.hpp), found without reading more than the limit. A read
// interrupted by SIGINT/SIGTERM/SIGHUP throws Interrupted (the line being read is dropped).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "limits.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tasks/shard.hpp"

namespace lstmlm::cli {

class LineReader {
 public:
  // paths empty: stdin only. `max_line`: bytes per line, the line end not counted.
  explicit LineReader(std::vector<std::string> paths, size_t max_line = kMaxLineBytes);
  // Only the given byte ranges of regular files (a shard: tasks::shard_ranges), each a "file" of its own
  // whose lines are numbered from 1 at its start; range_begin() says where it starts in the file.
  explicit LineReader(std::vector<tasks::FileRange> ranges, size_t max_line = kMaxLineBytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Next line of the current file, or false at the end of the current file (then call next_file()).
  bool next(std::string& line);
  // Up to `max` next lines of the current file into `lines` (cleared first); `first` gets the line number
  // of lines[0]; `ends`, when given, how each ended. Returns false when the current file had no line left.
  // From a terminal, pipe or socket the block ends early at a line after which no byte is ready yet, so an
  // interactive user gets each answer as the line is typed; a regular file is read in full blocks.
  bool next_block(std::vector<std::string>& lines, size_t max, uint64_t& first,
                  std::vector<tasks::LineEnd>* ends = nullptr);
  // Opens the next file; false when there is none.
  bool next_file();
  const std::string& source() const { return source_; }
  uint64_t range_begin() const { return begin_; }  // 0 but for a range after a file's start
  // The current file's index in the paths given (of a range: FileRange::file).
  size_t file_index() const { return ranges_.empty() ? index_ - 1 : ranges_[index_ - 1].file; }
  uint64_t line_number() const { return line_; }    // of the last line returned
  tasks::LineEnd line_end() const { return end_; }  // of the last line returned
  // Bytes read so far from the regular files (stdio's read-ahead included): the progress line's share.
  uint64_t bytes_done() const;

 private:
  int get();  // the next byte or EOF; resumes after EINTR unless a signal is pending
  bool ready() const;
  std::vector<std::string> paths_;
  std::vector<tasks::FileRange> ranges_;  // empty: whole files
  size_t max_line_;
  size_t index_ = 0;
  std::FILE* f_ = nullptr;
  std::string source_;
  uint64_t line_ = 0;
  uint64_t begin_ = 0, end_at_ = 0,
           at_ = 0;    // a range's bytes [begin_, end_at_); at_: the next byte's offset
  uint64_t done_ = 0;  // bytes of the regular files already closed
  tasks::LineEnd end_ = tasks::LineEnd::Lf;
  bool eof_ = false;   // the current file has returned its last line (a tty's EOF is not read twice)
  bool live_ = false;  // the current input is a terminal, pipe or socket (not a regular file)
};

// Checks every path up front, without opening it (a FIFO must be opened only once, when it is read), so
// that a missing, unreadable file or a directory fails before any output is written. `what` names the
// file in the message when not empty ("the prompt file"): "PATH: cannot open[ WHAT]: REASON".
void check_readable(const std::vector<std::string>& paths, const std::string& what = "");

// The whole content of one file (generate's --prompt-file), after check_readable, at most kMaxLineBytes
// (read as it comes: a FIFO or an endless device is stopped there). Throws InputError.
std::string read_file(const std::string& path, const std::string& what);

}  // namespace lstmlm::cli
