#include "ngram/arpa_lines.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "lstmlm/error.hpp"

namespace lstmlm::ngram {

namespace {
constexpr size_t kChunk = size_t{1} << 16;
}

LineSource::LineSource(const std::string& path) : path_(path) {
  errno = 0;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw ModelError(path, std::string("cannot open: ") + (errno ? std::strerror(errno) : "out of memory"));
  gzbuffer(f, static_cast<unsigned>(kChunk));
  file_ = f;
  buffer_.resize(kChunk);
}

LineSource::~LineSource() {
  if (file_) gzclose(static_cast<gzFile>(file_));
}

bool LineSource::fill() {
  if (eof_) return false;
  const int n = gzread(static_cast<gzFile>(file_), buffer_.data(), static_cast<unsigned>(buffer_.size()));
  if (n < 0) {
    int code = 0;
    const char* what = gzerror(static_cast<gzFile>(file_), &code);
    throw ModelError(path_, "line " + std::to_string(number_ + 1) +
                                ": cannot read: " + (code == Z_ERRNO ? std::strerror(errno) : what));
  }
  begin_ = 0;
  end_ = static_cast<size_t>(n);
  if (n == 0) {
    // A gzip stream cut short reads as a clean end unless its trailer is checked.
    int code = 0;
    const char* what = gzerror(static_cast<gzFile>(file_), &code);
    if (code != Z_OK && code != Z_STREAM_END)
      throw ModelError(path_, "line " + std::to_string(number_ + 1) + ": cannot read: " + what);
    eof_ = true;
  }
  return n > 0;
}

bool LineSource::next(std::string_view& line) {
  line_.clear();
  bool any = false;
  for (;;) {
    if (begin_ == end_ && !fill()) break;
    any = true;
    const char* start = buffer_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    const size_t take = nl ? static_cast<size_t>(static_cast<const char*>(nl) - start) : end_ - begin_;
    if (line_.size() + take > kMaxArpaLineBytes)
      throw ModelError(path_, "line " + std::to_string(number_ + 1) + ": longer than " +
                                  std::to_string(kMaxArpaLineBytes) + " bytes (not an ARPA file?)");
    line_.append(start, take);
    begin_ += take;
    if (nl) {
      ++begin_;
      break;
    }
  }
  if (!any && line_.empty()) return false;
  ++number_;
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  if (line_.find('\0') != std::string::npos)
    throw ModelError(path_, "line " + std::to_string(number_) + ": a NUL byte (not an ARPA text file)");
  line = line_;
  return true;
}

}  // namespace lstmlm::ngram
