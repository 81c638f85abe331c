// Checked output to stdout: a closed pipe ends the program quietly (exit 0), any other write error
// is an OutputError (exit 1). Nothing is written silently half.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace lstmlm::cli {

// Thrown when the reader of stdout went away (EPIPE); main exits 0 without a message.
struct ClosedPipe {};

class Output {
 public:
  explicit Output(std::FILE* f = stdout) : f_(f) {}
  void write(std::string_view s);
  void line(std::string_view s) {
    write(s);
    write("\n");
  }
  void flush();

 private:
  std::FILE* f_;
};

// Whether stderr is a terminal (progress lines are shown only then, unless forced).
bool stderr_is_terminal();

}  // namespace lstmlm::cli
