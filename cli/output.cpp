#include "output.hpp"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>

#include "lstmlm/error.hpp"

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

// The length of the valid UTF-8 sequence at s[i], or 0.
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0Fu;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

void append_hex(std::string& out, unsigned char c) {
  static const char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
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

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F)
        append_hex(out, c);
      else
        out += static_cast<char>(c);
      ++i;
    } else if (size_t n = utf8_length(s, i)) {
      out.append(s, i, n);
      i += n;
    } else {
      append_hex(out, c);
      ++i;
    }
  }
  return out;
}

void print_diagnostic(std::string_view prefix, std::string_view message) {
  std::string line(prefix);
  line += printable(message);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace lstmlm::cli
