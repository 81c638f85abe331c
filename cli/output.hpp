// Checked output to stdout: a closed pipe ends the program quietly (exit 0), any other write error
// is an OutputError (exit 1). Nothing is written silently half.
//
// Also the two things every subcommand shares about ending: SIGINT, SIGTERM and SIGHUP only set a flag
// (install_signal_handlers), which the writers check between records and LineReader checks when a read is
// interrupted; and the one-line diagnostics on stderr, with control bytes and invalid UTF-8 escaped.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace lstmlm::cli {

// Thrown when the reader of stdout went away (EPIPE); main exits 0 without a message.
struct ClosedPipe {};

// Thrown between records after SIGINT, SIGTERM or SIGHUP; main exits 128 + signal (docs/errors.md).
struct Interrupted {
  int signal;
};

class Output {
 public:
  explicit Output(std::FILE* f = stdout) : f_(f) {}
  // Writes all of `s`, whole records (write(2) on the stream's descriptor, resumed after EINTR, so a
  // record that was started is finished). Throws Interrupted, without writing, when a signal is pending
  // before it starts, and after writing when one came meanwhile.
  void write(std::string_view s);
  void line(std::string_view s);
  // Writes `s` even after a signal: the end of a record already started (generate's streamed line end).
  void write_through(std::string_view s);
  void flush();

 private:
  std::FILE* f_;
};

// Whether stderr is a terminal (progress lines are shown only then, unless forced).
bool stderr_is_terminal();

// SIGINT, SIGTERM, SIGHUP (unless inherited as ignored): the handler records the first signal and nothing
// else; no SA_RESTART, so a blocking read returns EINTR. A second signal has its default action.
void install_signal_handlers();
// The first signal received, or 0.
int pending_signal();
// Throws Interrupted when a signal is pending.
void check_interrupted();
// "SIGINT", "SIGTERM", "SIGHUP", else "signal N".
std::string signal_name(int sig);

// `prefix` then lstmlm::printable(message) and a line end on stderr, all bytes written (a NUL does not cut
// it).
void print_diagnostic(std::string_view prefix, std::string_view message);

}  // namespace lstmlm::cli
