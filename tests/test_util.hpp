// Helpers shared by the tests: paths of the repo, the shared data and the CLI; running the CLI.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace lstmlm::test {

inline std::filesystem::path source_dir() { return LSTMLM_SOURCE_DIR; }
// ../shared/data next to the repository; tests that need it skip with a reason when it is absent.
inline std::filesystem::path shared_data() { return source_dir() / ".." / "shared" / "data"; }
inline std::string cli() { return LSTMLM_CLI; }

struct CliResult {
  int status = -1;  // exit status, or 128+signal when killed
  std::string out, err;
};

// Runs `lstmlm <args>` through /bin/sh (args are passed verbatim: quote them), capturing both streams.
inline CliResult run_cli(const std::string& args, const std::string& stdin_text = "") {
  namespace fs = std::filesystem;
  static int counter = 0;
  fs::path dir = fs::temp_directory_path() / ("lstmlm_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string base = (dir / std::to_string(counter++)).string();
  {
    std::FILE* f = std::fopen((base + ".in").c_str(), "wb");
    std::fwrite(stdin_text.data(), 1, stdin_text.size(), f);
    std::fclose(f);
  }
  // Built by appending: `"'" + std::string` trips a GCC 12 -Wrestrict false positive.
  std::string cmd(1, '\'');
  cmd += cli() + "' " + args + " <'" + base + ".in' >'" + base + ".out' 2>'" + base + ".err'";
  int raw = std::system(cmd.c_str());
  CliResult r;
  if (WIFEXITED(raw))
    r.status = WEXITSTATUS(raw);
  else if (WIFSIGNALED(raw))
    r.status = 128 + WTERMSIG(raw);
  auto slurp = [](const std::string& p) {
    std::string s;
    if (std::FILE* f = std::fopen(p.c_str(), "rb")) {
      char buf[65536];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
      std::fclose(f);
    }
    return s;
  };
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  for (auto ext : {".in", ".out", ".err"}) fs::remove(base + ext);
  std::error_code ec;
  fs::remove(dir, ec);  // the per-process directory too: removed only once empty, never left in /tmp
  return r;
}

}  // namespace lstmlm::test
