// The library's readers take paths: hand them the fuzz input as an in-memory file.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <string>

namespace lstmlm::fuzz {

class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) : fd_(::memfd_create("fuzz", 0)) {
    size_t done = 0;
    while (fd_ >= 0 && done < size) {
      ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }
  ~MemFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

}  // namespace lstmlm::fuzz
