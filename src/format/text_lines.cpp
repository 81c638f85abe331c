#include "format/text_lines.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "lstmlm/error.hpp"

#ifndef LSTMLM_NO_ZLIB
#include <zlib.h>
#endif

namespace lstmlm::format {

namespace {
constexpr size_t kChunk = size_t{1} << 16;
}

#ifdef LSTMLM_NO_ZLIB
// A build without zlib (LSTMLM_NO_ZLIB: WebAssembly) reads plain files and refuses gzip-compressed ones.
TextLines::TextLines(const std::string& path, size_t max_line, std::string kind)
    : path_(path), kind_(std::move(kind)), max_line_(max_line) {
  errno = 0;
  std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(path + ": cannot open: " + (errno ? std::strerror(errno) : "out of memory"));
  file_ = f;
  buffer_.resize(kChunk);
  // The first bytes stay in the buffer, where next() takes them first.
  end_ = std::fread(buffer_.data(), 1, 2, f);
  if (end_ == 2 && buffer_[0] == '\x1f' && buffer_[1] == '\x8b') {
    if (f != stdin) std::fclose(f);  // no destructor runs for a constructor that throws
    throw InputError(path +
                     ": gzip-compressed, which this build (WebAssembly, without zlib) cannot read: "
                     "decompress it first");
  }
}

TextLines::~TextLines() {
  if (file_ && file_ != stdin) std::fclose(static_cast<std::FILE*>(file_));
}

bool TextLines::fill() {
  if (eof_) return false;
  std::FILE* f = static_cast<std::FILE*>(file_);
  const size_t n = std::fread(buffer_.data(), 1, buffer_.size(), f);
  if (std::ferror(f))
    throw InputError(path_, number_ + 1, std::string("cannot read: ") + std::strerror(errno));
  begin_ = 0;
  end_ = n;
  if (n == 0) eof_ = true;
  return n > 0;
}
#else

TextLines::TextLines(const std::string& path, size_t max_line, std::string kind)
    : path_(path), kind_(std::move(kind)), max_line_(max_line) {
  errno = 0;
  gzFile f = path == "-" ? gzdopen(dup(STDIN_FILENO), "rb") : gzopen(path.c_str(), "rb");
  if (!f) throw InputError(path + ": cannot open: " + (errno ? std::strerror(errno) : "out of memory"));
  gzbuffer(f, static_cast<unsigned>(kChunk));
  file_ = f;
  buffer_.resize(kChunk);
}

TextLines::~TextLines() {
  if (file_) gzclose(static_cast<gzFile>(file_));
}

bool TextLines::fill() {
  if (eof_) return false;
  const int n = gzread(static_cast<gzFile>(file_), buffer_.data(), static_cast<unsigned>(buffer_.size()));
  int code = 0;
  if (n < 0) {
    const char* what = gzerror(static_cast<gzFile>(file_), &code);
    throw InputError(path_, number_ + 1,
                     std::string("cannot read: ") + (code == Z_ERRNO ? std::strerror(errno) : what));
  }
  begin_ = 0;
  end_ = static_cast<size_t>(n);
  if (n == 0) {
    // A gzip stream cut short reads as a clean end unless its trailer is checked.
    const char* what = gzerror(static_cast<gzFile>(file_), &code);
    if (code != Z_OK && code != Z_STREAM_END)
      throw InputError(path_, number_ + 1, std::string("cannot read: ") + what);
    eof_ = true;
  }
  return n > 0;
}
#endif

bool TextLines::next(std::string_view& line) {
  line_.clear();
  bool any = false;
  for (;;) {
    if (begin_ == end_ && !fill()) break;
    any = true;
    const char* start = buffer_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    const size_t take = nl ? static_cast<size_t>(static_cast<const char*>(nl) - start) : end_ - begin_;
    if (line_.size() + take > max_line_)
      throw InputError(path_, number_ + 1,
                       "longer than " + std::to_string(max_line_) + " bytes (not " + kind_ + "?)");
    line_.append(start, take);
    begin_ += take;
    bytes_ += take;
    if (nl) {
      ++begin_;
      ++bytes_;
      break;
    }
  }
  if (!any && line_.empty()) return false;
  ++number_;
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  if (line_.find('\0') != std::string::npos)
    throw InputError(path_, number_, "a NUL byte (not " + kind_ + ")");
  line = line_;
  return true;
}

}  // namespace lstmlm::format
