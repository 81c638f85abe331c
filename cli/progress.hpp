// The progress line of a long run on stderr (score, predict, rescore, fidelity): what is done, and when the
// input's size is known (regular files) the share of its bytes read and an estimate of the time left.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace lstmlm::cli {

// The summed size of the inputs ('-' or none: stdin) when every one is a regular file, else 0 (unknown).
uint64_t input_bytes(const std::vector<std::string>& paths);

// Whether the inputs (none or '-': stdin) include a terminal being read: someone typing, whose pauses a
// speed would count.
bool reads_a_terminal(const std::vector<std::string>& inputs);

class Progress {
 public:
  // `mode` as --progress: auto (only when stderr is a terminal, and not when the input is that terminal: a
  // line rewritten in place would mix with what the user types), always, never. `inputs` as the
  // subcommand's FILE list (none or '-': stdin), for their size and whether a terminal is read.
  Progress(std::string name, const std::string& mode, const std::vector<std::string>& inputs);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  bool enabled() const { return enabled_; }
  // The bytes the run reads, when not the inputs' whole size (a shard of them).
  void set_total(uint64_t bytes) { total_ = bytes; }
  // "\rNAME: P% of SIZE, ETA M:SS, COUNTS " (without the share and the estimate when the size is unknown),
  // at most five times a second; `counts` says what is done ("1234 lines, 45678 tokens/s").
  void update(uint64_t done_bytes, const std::string& counts);
  // Ends the line when one was written.
  void finish();

 private:
  std::string name_;
  bool enabled_ = false, written_ = false;
  uint64_t total_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace lstmlm::cli
