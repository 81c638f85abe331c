// Helpers shared by the tests: paths of the repo, the shared data and the CLI; running the CLI.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace lstmlm::test {

inline std::filesystem::path source_dir() { return LSTMLM_SOURCE_DIR; }
// ../shared/data next to the repository; tests that need it skip with a reason when it is absent.
inline std::filesystem::path shared_data() { return source_dir() / ".." / "shared" / "data"; }
inline std::string cli() { return LSTMLM_CLI; }
// The bundled model `name` as the CLI's -m argument, quoted for the shell.
inline std::string model_arg(const std::string& name = "fairytales-word") {
  return "-m '" + (source_dir() / "models" / name).string() + "'";
}
// A text with an empty line and an out-of-vocabulary word for the word model.
inline const std::string kScoreText =
    "once upon a time there was a king\n\nthe queen zzqx said\nand the king\n";

inline size_t count_lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}
inline std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// A fresh, empty directory under the system temp dir (unique per process and tag), removed on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() / ("lstmlm_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct CliResult {
  int status = -1;  // exit status, or 128+signal when killed
  std::string out, err;
};

// Runs `lstmlm <args>` through /bin/sh (args are passed verbatim: quote them), capturing both streams.
inline CliResult run_cli(const std::string& args, const std::string& stdin_text = "") {
  namespace fs = std::filesystem;
  static int counter = 0;
  static const TempDir dir("cli");  // one per process, removed at exit
  std::string base = (dir / std::to_string(counter++)).string();
  // A harness failure throws (gtest reports it): a made-up status could pass a "refused" check.
  {
    std::FILE* f = std::fopen((base + ".in").c_str(), "wb");
    if (!f) throw std::runtime_error("run_cli: cannot write " + base + ".in");
    std::fwrite(stdin_text.data(), 1, stdin_text.size(), f);
    std::fclose(f);
  }
  // Built by appending: `"'" + std::string` trips a GCC 12 -Wrestrict false positive.
  std::string cmd(1, '\'');
  cmd += cli() + "' " + args + " <'" + base + ".in' >'" + base + ".out' 2>'" + base + ".err'";
  int raw = std::system(cmd.c_str());
  if (raw == -1) throw std::runtime_error("run_cli: cannot start /bin/sh");
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
  return r;
}

}  // namespace lstmlm::test
