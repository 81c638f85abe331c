#include "line_reader.hpp"

#include <cerrno>
#include <cstring>

#include "lstmlm/error.hpp"

namespace lstmlm::cli {

namespace {
std::FILE* open_input(const std::string& path) {
  if (path == "-") return stdin;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(path + ": cannot open: " + std::strerror(errno));
  return f;
}
}  // namespace

LineReader::LineReader(std::vector<std::string> paths) : paths_(std::move(paths)) {
  if (paths_.empty()) paths_.push_back("-");
}

LineReader::~LineReader() {
  if (f_ && f_ != stdin) std::fclose(f_);
}

bool LineReader::next_file() {
  if (f_ && f_ != stdin) std::fclose(f_);
  f_ = nullptr;
  if (index_ >= paths_.size()) return false;
  source_ = paths_[index_++];
  f_ = open_input(source_);
  line_ = 0;
  eof_ = false;
  return true;
}

bool LineReader::next(std::string& line) {
  if (!f_ || eof_) return false;
  line.clear();
  int c;
  bool any = false;
  while ((c = getc_unlocked(f_)) != EOF) {
    any = true;
    if (c == '\n') break;
    line.push_back(static_cast<char>(c));
  }
  if (std::ferror(f_)) throw InputError(source_ + ": read error: " + std::strerror(errno));
  if (!any) {
    eof_ = true;
    return false;
  }
  ++line_;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line_ == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
  return true;
}

bool LineReader::next_block(std::vector<std::string>& lines, size_t max, uint64_t& first) {
  lines.clear();
  first = line_ + 1;
  std::string line;
  while (lines.size() < max && !eof_ && next(line)) lines.push_back(std::move(line));
  return !lines.empty();
}

void check_readable(const std::vector<std::string>& paths) {
  for (const auto& p : paths)
    if (p != "-") std::fclose(open_input(p));
}

}  // namespace lstmlm::cli
