#include "output.hpp"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::cli {

namespace {

[[noreturn]] void fail(int err) {
  if (err == EPIPE) throw ClosedPipe{};
  throw OutputError(std::string("stdout: write failed: ") + std::strerror(err));
}

volatile std::sig_atomic_t g_signal = 0;
pthread_t g_main_thread;

// Only async-signal-safe calls. A signal the kernel gives to an engine thread is passed on to the main
// thread, the one that may be blocked in a read.
extern "C" void on_signal(int sig) {
  const int saved = errno;
  if (!pthread_equal(pthread_self(), g_main_thread)) {
    pthread_kill(g_main_thread, sig);
  } else if (g_signal == 0) {
    g_signal = sig;
  } else {
    // A second signal: the user insists; the default action ends the program now.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  errno = saved;
}

}  // namespace

void Output::write(std::string_view s) {
  check_interrupted();
  write_through(s);
  check_interrupted();
}

void Output::write_through(std::string_view s) {
  if (s.empty()) return;
  // Anything written to the stream through stdio goes first (nothing in the subcommands does).
  errno = 0;
  if (std::fflush(f_) != 0) fail(errno ? errno : EIO);
  const int fd = ::fileno(f_);
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;  // a signal: the record is finished first, the flag is seen after it
      fail(errno);
    }
    if (n == 0) fail(EIO);
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void Output::line(std::string_view s) {
  std::string l;
  l.reserve(s.size() + 1);
  l.append(s);
  l += '\n';
  write(l);
}

void Output::flush() {
  errno = 0;
  if (std::fflush(f_) != 0 || std::ferror(f_)) fail(errno ? errno : EIO);
}

bool stderr_is_terminal() { return ::isatty(2) == 1; }

void install_signal_handlers() {
  g_main_thread = pthread_self();
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // nohup, `cmd &`
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking read returns EINTR and LineReader sees the flag
    sigaction(sig, &sa, nullptr);
  }
}

int pending_signal() { return static_cast<int>(g_signal); }

void check_interrupted() {
  if (int sig = pending_signal()) throw Interrupted{sig};
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(sig);
  }
}

void print_diagnostic(std::string_view prefix, std::string_view message) {
  std::string line(prefix);
  line += lstmlm::printable(message);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace lstmlm::cli
