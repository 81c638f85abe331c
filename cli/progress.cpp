#include "progress.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "output.hpp"

namespace lstmlm::cli {

uint64_t input_bytes(const std::vector<std::string>& paths) {
  const std::vector<std::string> all = paths.empty() ? std::vector<std::string>{"-"} : paths;
  uint64_t total = 0;
  for (const auto& p : all) {
    struct stat st {};
    if ((p == "-" ? ::fstat(STDIN_FILENO, &st) : ::stat(p.c_str(), &st)) != 0 || !S_ISREG(st.st_mode))
      return 0;
    total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

bool reads_a_terminal(const std::vector<std::string>& inputs) {
  const bool stdin_read = inputs.empty() || std::find(inputs.begin(), inputs.end(), "-") != inputs.end();
  return stdin_read && ::isatty(STDIN_FILENO) == 1;
}

Progress::Progress(std::string name, const std::string& mode, const std::vector<std::string>& inputs)
    : name_(std::move(name)),
      enabled_(mode == "always" || (mode == "auto" && stderr_is_terminal() && !reads_a_terminal(inputs))),
      total_(input_bytes(inputs)),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

namespace {
std::string size_text(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  return buf;
}
}  // namespace

void Progress::update(uint64_t done_bytes, const std::string& counts) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (written_ && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  std::string line = "\r" + name_ + ": ";
  if (total_ > 0) {
    const double share = std::min(1.0, static_cast<double>(done_bytes) / static_cast<double>(total_));
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.1f%% of %s", 100.0 * share, size_text(total_).c_str());
    line += buf;
    if (share > 0.0 && share < 1.0) {
      const long left = static_cast<long>(elapsed * (1.0 - share) / share + 0.5);
      std::snprintf(buf, sizeof buf, ", ETA %ld:%02ld", left / 60, left % 60);
      line += buf;
    }
    line += ", ";
  }
  line += counts + " ";
  std::fputs(line.c_str(), stderr);
  written_ = true;
}

void Progress::finish() {
  if (written_) std::fputc('\n', stderr);
  written_ = false;
}

}  // namespace lstmlm::cli
