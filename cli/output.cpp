#include "output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lstmlm/error.hpp"

namespace lstmlm::cli {

namespace {
[[noreturn]] void fail(int err) {
  if (err == EPIPE) throw ClosedPipe{};
  throw OutputError(std::string("stdout: write failed: ") + std::strerror(err));
}
}  // namespace

void Output::write(std::string_view s) {
  if (s.empty()) return;
  errno = 0;
  if (std::fwrite(s.data(), 1, s.size(), f_) != s.size()) fail(errno ? errno : EIO);
}

void Output::flush() {
  errno = 0;
  if (std::fflush(f_) != 0) fail(errno ? errno : EIO);
}

bool stderr_is_terminal() { return ::isatty(2) == 1; }

}  // namespace lstmlm::cli
