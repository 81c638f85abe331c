#include "lstmlm/tasks/shard.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "lstmlm/error.hpp"

namespace lstmlm::tasks {

namespace {

std::string os_error(const std::string& path, const char* what) {
  return path + ": " + what + ": " + std::strerror(errno);
}

// A file opened for pread, closed on every path out.
class File {
 public:
  explicit File(const std::string& path) : path_(path) {
    do fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) throw InputError(os_error(path, "cannot open"));
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  uint64_t size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw InputError(os_error(path_, "cannot stat"));
    if (!S_ISREG(st.st_mode))
      throw UsageError::option("shard", ": " + path_ +
                                            " is not a regular file (a pipe, a device or stdin cannot "
                                            "be cut by bytes)");
    return static_cast<uint64_t>(st.st_size);
  }
  // Up to n bytes at `at`; 0 at the end of the file.
  size_t read(char* buf, size_t n, uint64_t at) const {
    for (;;) {
      const ssize_t got = ::pread(fd_, buf, n, static_cast<off_t>(at));
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) throw InputError(os_error(path_, "read error"));
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// The first line start at or after `at` in a file of `size` bytes (`size` when none).
uint64_t line_start(const File& f, uint64_t at, uint64_t size) {
  if (at == 0 || at >= size) return std::min(at, size);
  char buf[65536];
  uint64_t pos = at - 1;  // a line starts at `at` when the byte before it ends a line
  while (pos < size) {
    const size_t n = f.read(buf, sizeof buf, pos);
    if (n == 0) return size;  // the file shrank: its end
    if (const void* nl = std::memchr(buf, '\n', n)) return pos + (static_cast<const char*>(nl) - buf) + 1;
    pos += n;
  }
  return size;
}

}  // namespace

Shard parse_shard(std::string_view text) {
  auto bad = [&] {
    return UsageError::option("shard", " must be K/N with 1 <= K <= N <= " + std::to_string(kMaxShards) +
                                           ", got '" + std::string(text.substr(0, 40)) + "'");
  };
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) throw bad();
  auto number = [&](std::string_view s, uint32_t& v) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  Shard s;
  if (!number(text.substr(0, slash), s.index) || !number(text.substr(slash + 1), s.count) || s.index < 1 ||
      s.index > s.count || s.count > kMaxShards)
    throw bad();
  return s;
}

std::vector<FileRange> shard_ranges(const std::vector<std::string>& paths, Shard shard) {
  if (shard.index < 1 || shard.index > shard.count || shard.count > kMaxShards)
    throw UsageError::option("shard", " must be K/N with 1 <= K <= N");
  if (paths.empty()) throw UsageError::option("shard", ": needs input files (stdin cannot be cut by bytes)");
  std::vector<uint64_t> sizes;
  uint64_t total = 0;
  for (const auto& p : paths) {
    if (p == "-") throw UsageError::option("shard", ": needs input files (stdin cannot be cut by bytes)");
    sizes.push_back(File(p).size());
    total += sizes.back();
  }
  // The cuts in the concatenated input; 128-bit so that size * count cannot overflow.
  auto cut = [&](uint32_t k) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(total) * k / shard.count);
  };
  const uint64_t lo = cut(shard.index - 1), hi = cut(shard.index);
  std::vector<FileRange> out;
  uint64_t base = 0;  // the file's first byte in the concatenated input
  for (size_t i = 0; i < paths.size(); base += sizes[i], ++i) {
    const uint64_t size = sizes[i];
    if (size == 0 || base + size <= lo || base >= hi) continue;  // no line of a file crosses its end
    File f(paths[i]);
    const uint64_t b = lo > base ? line_start(f, lo - base, size) : 0;
    const uint64_t e = hi - base < size ? line_start(f, hi - base, size) : size;
    if (b < e) out.push_back({paths[i], i, b, e});
  }
  return out;
}

uint64_t lines_before(const std::string& path, uint64_t offset) {
  File f(path);
  char buf[1 << 16];
  uint64_t lines = 0, pos = 0;
  while (pos < offset) {
    const size_t n = f.read(buf, static_cast<size_t>(std::min<uint64_t>(sizeof buf, offset - pos)), pos);
    if (n == 0) break;
    for (const char* p = buf; (p = static_cast<const char*>(std::memchr(p, '\n', buf + n - p))); ++p) ++lines;
    pos += n;
  }
  return lines;
}

}  // namespace lstmlm::tasks
