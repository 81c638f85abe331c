// Running the CLI under hostile conditions: stdout a pipe whose reader is gone or /dev/full, and a cap on
// memory (ulimit -v; under ASan, which reserves terabytes of address space, ASan's own allocation cap).
#pragma once
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "test_util.hpp"

namespace lstmlm::test {

enum class Stdout { File, ClosedPipe, DevFull };

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAsan = true;
#else
inline constexpr bool kAsan = false;
#endif
#else
inline constexpr bool kAsan = false;
#endif

#if defined(LSTMLM_TEST_EMULATED)
inline constexpr int kEmulatorMb = 512;
#else
inline constexpr int kEmulatorMb = 0;
#endif

// The shell prefix that caps the CLI's memory at `mb` MiB: any larger allocation fails inside the process
// (bad_alloc), so a test sees a refusal or "out of memory" instead of the machine's OOM killer.
inline std::string memory_cap(int mb) {
  if (kAsan)
    return "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_"
           "mb=" +
           std::to_string(mb) + "\" ";
  // + the binary and its libraries; under qemu-user (a cross build's tests) + the emulator's own translation
  // cache and maps, which count against ulimit -v too (about 250 MiB more, measured).
  return "ulimit -v " + std::to_string(mb * 1024 + (200 + kEmulatorMb) * 1024) + "; ";
}

// Runs `lstmlm <args>` (through /bin/sh, after `prefix`, as the argument of `wrapper`, e.g. "timeout 60 ")
// with the given stdout; stdout is captured only for Stdout::File.
inline CliResult run_cli_to(const std::string& args, Stdout where, const std::string& stdin_text = "",
                            const std::string& prefix = "", const std::string& wrapper = "") {
  namespace fs = std::filesystem;
  static int counter = 0;
  static const TempDir dir("hostile");  // one per process, removed at exit
  std::string base = (dir / std::to_string(counter++)).string();
  std::ofstream(base + ".in", std::ios::binary) << stdin_text;
  std::string cmd = prefix + "exec " + wrapper + "'" + cli() + "' " + args;
  // A harness failure throws (gtest reports it) rather than return a status a test could take for the
  // CLI's: a default CliResult's -1 passes every "refused" (status != 0) check.
  auto check = [](int rc, const char* what) {
    if (rc < 0) throw std::runtime_error(std::string("run_cli_to: ") + what + ": " + std::strerror(errno));
    return rc;
  };
  int out_fd = -1, pipe_fd[2] = {-1, -1};
  if (where == Stdout::ClosedPipe) {
    check(::pipe(pipe_fd), "pipe");
    ::close(pipe_fd[0]);  // the reader is gone before the first write: EPIPE every time, no race
    out_fd = pipe_fd[1];
  } else if (where == Stdout::DevFull) {
    out_fd = check(::open("/dev/full", O_WRONLY), "/dev/full");
  } else {
    out_fd = check(::open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), "stdout file");
  }
  int in_fd = check(::open((base + ".in").c_str(), O_RDONLY), "stdin file");
  int err_fd = check(::open((base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), "stderr file");
  pid_t pid = check(::fork(), "fork");
  if (pid == 0) {
    ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in_fd);
  ::close(out_fd);
  ::close(err_fd);
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  CliResult r;
  if (WIFEXITED(raw))
    r.status = WEXITSTATUS(raw);
  else if (WIFSIGNALED(raw))
    r.status = 128 + WTERMSIG(raw);
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  if (where == Stdout::File) r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  for (auto ext : {".in", ".out", ".err"}) fs::remove(base + ext);
  return r;
}

}  // namespace lstmlm::test
