#include "line_reader.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lstmlm/error.hpp"
#include "output.hpp"

namespace lstmlm::cli {

namespace {

std::string cannot_open(const std::string& path, const std::string& what, const std::string& reason) {
  return path + ": cannot open" + (what.empty() ? "" : " " + what) + ": " + reason;
}

// fopen, resumed after EINTR (opening a FIFO waits for its writer) unless a signal is pending.
std::FILE* open_input(const std::string& path, const std::string& what = "") {
  if (path == "-") return stdin;
  for (;;) {
    if (std::FILE* f = std::fopen(path.c_str(), "rb")) return f;
    if (errno != EINTR) throw InputError(cannot_open(path, what, std::strerror(errno)));
    check_interrupted();
  }
}

// Input that starts with gzip's magic bytes 1f 8b: text would be invalid UTF-8 at byte 2.
std::string compressed_input(const std::string& path) {
  return path + ": compressed input (gzip): decompress it or pipe it through zcat (zcat " +
         (path == "-" ? std::string("FILE") : path) + " | lstmlm ...)";
}

bool starts_gzip(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;  // the reader says why
  unsigned char b[2] = {0, 0};
  const bool gz = std::fread(b, 1, 2, f) == 2 && b[0] == 0x1f && b[1] == 0x8b;
  std::fclose(f);
  return gz;
}

std::string read_error(const std::string& path, int err) {
  return path + ": read error: " + std::strerror(err ? err : EIO);
}

}  // namespace

LineReader::LineReader(std::vector<std::string> paths, size_t max_line)
    : paths_(std::move(paths)), max_line_(max_line) {
  if (paths_.empty()) paths_.push_back("-");
}

LineReader::LineReader(std::vector<tasks::FileRange> ranges, size_t max_line)
    : ranges_(std::move(ranges)), max_line_(max_line) {
  for (const auto& r : ranges_) paths_.push_back(r.path);
}

LineReader::~LineReader() {
  if (f_ && f_ != stdin) std::fclose(f_);
}

uint64_t LineReader::bytes_done() const {
  if (!f_ || live_) return done_;
  if (!ranges_.empty()) return done_ + (at_ - begin_);
  const off_t at = ::ftello(f_);
  return done_ + (at > 0 ? static_cast<uint64_t>(at) : 0);
}

bool LineReader::next_file() {
  done_ = bytes_done();
  if (f_ && f_ != stdin) std::fclose(f_);
  f_ = nullptr;
  if (index_ >= paths_.size()) return false;
  source_ = paths_[index_++];
  f_ = open_input(source_);
  line_ = 0;
  eof_ = false;
  struct stat st {};
  live_ = ::fstat(fileno(f_), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode);
  begin_ = at_ = end_at_ = 0;
  if (!ranges_.empty()) {
    const auto& r = ranges_[index_ - 1];
    begin_ = at_ = r.begin;
    end_at_ = r.end;
    if (::fseeko(f_, static_cast<off_t>(r.begin), SEEK_SET) != 0)
      throw InputError(read_error(source_, errno));
  }
  return true;
}

// Whether a byte can be read now without waiting: in stdio's buffer (glibc's FILE fields), or on the
// descriptor. A file descriptor error counts as ready: the read reports it.
bool LineReader::ready() const {
  if (f_->_IO_read_ptr < f_->_IO_read_end) return true;
  pollfd p{fileno(f_), POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
}

int LineReader::get() {
  for (;;) {
    int c = getc_unlocked(f_);
    if (c != EOF || !std::ferror(f_)) return c;
    if (errno != EINTR) throw InputError(read_error(source_, errno));
    std::clearerr(f_);  // nothing was read: resume, unless the read was cut short by our signal
    check_interrupted();
  }
}

bool LineReader::next(std::string& line) {
  if (!f_ || eof_) return false;
  if (!ranges_.empty() && at_ >= end_at_) {  // the range ends at a line start
    eof_ = true;
    return false;
  }
  line.clear();
  int c;
  bool any = false;
  bool ended = false;  // by a line end, not by the end of the file
  while ((c = get()) != EOF) {
    any = true;
    ++at_;
    if (c == '\n') {
      ended = true;
      break;
    }
    if (line.size() >= max_line_) {
      // Over the limit, unless this is the CR of a CRLF (or of the file's last line).
      int d = c == '\r' ? get() : 0;
      at_ += d != EOF && c == '\r';
      if (c == '\r' && (d == '\n' || d == EOF)) {
        ended = d == '\n';
        line.push_back('\r');
        break;
      }
      throw InputError(source_ + ":" + std::to_string(line_ + 1) + ": line is longer than " +
                       std::to_string(max_line_) + " bytes (the limit per line): split it");
    }
    line.push_back(static_cast<char>(c));
    if (line_ == 0 && begin_ == 0 && line.size() == 2 && line[0] == '\x1f' && line[1] == '\x8b')
      throw InputError(compressed_input(source_));
  }
  if (!any) {
    eof_ = true;
    return false;
  }
  if (!ended) eof_ = true;  // no final line end: the next call would read EOF again
  ++line_;
  const bool cr = !line.empty() && line.back() == '\r';
  if (cr) line.pop_back();
  end_ = !ended ? tasks::LineEnd::None : cr ? tasks::LineEnd::CrLf : tasks::LineEnd::Lf;
  if (line_ == 1 && begin_ == 0 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
  return true;
}

bool LineReader::next_block(std::vector<std::string>& lines, size_t max, uint64_t& first,
                            std::vector<tasks::LineEnd>* ends) {
  lines.clear();
  if (ends) ends->clear();
  first = line_ + 1;
  std::string line;
  while (lines.size() < max && !eof_ && next(line)) {
    lines.push_back(std::move(line));
    if (ends) ends->push_back(end_);
    // A terminal or a pipe with nothing more ready: answer what was typed so far, as KenLM's query does,
    // instead of waiting for a full block or the end of the input.
    if (live_ && !ready()) break;
  }
  return !lines.empty();
}

void check_readable(const std::vector<std::string>& paths, const std::string& what) {
  for (const auto& p : paths) {
    if (p == "-") continue;
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) throw InputError(cannot_open(p, what, std::strerror(errno)));
    if (S_ISDIR(st.st_mode)) throw InputError(cannot_open(p, what, "is a directory"));
    if (::access(p.c_str(), R_OK) != 0) throw InputError(cannot_open(p, what, std::strerror(errno)));
    // Only a regular file is looked into here (a FIFO must not be read twice or block).
    if (S_ISREG(st.st_mode) && starts_gzip(p)) throw InputError(compressed_input(p));
  }
}

std::string read_file(const std::string& path, const std::string& what) {
  check_readable({path}, what);
  std::FILE* f = open_input(path, what);
  std::string s;
  char buf[65536];
  for (;;) {
    size_t n = std::fread(buf, 1, sizeof buf, f);
    if (s.size() + n > kMaxLineBytes) {
      if (f != stdin) std::fclose(f);
      throw InputError(path + ": " + (what.empty() ? "the file" : what) + " is longer than " +
                       std::to_string(kMaxLineBytes) + " bytes (the limit of one input line)");
    }
    s.append(buf, n);
    if (n == sizeof buf) continue;
    if (!std::ferror(f)) break;
    int err = errno;
    if (err == EINTR && !pending_signal()) {
      std::clearerr(f);
      continue;
    }
    if (f != stdin) std::fclose(f);
    if (err == EINTR) check_interrupted();
    throw InputError(read_error(path, err));
  }
  if (f != stdin) std::fclose(f);
  return s;
}

}  // namespace lstmlm::cli
