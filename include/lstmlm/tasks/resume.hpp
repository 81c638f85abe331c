// A directory that keeps a long run's output block by block, so that a run killed at any point (SIGKILL,
// the OOM killer, a preempted node) and launched again with the same inputs and options redoes only the
// block it was in (`lstmlm score --resume DIR`, lstmlm.dask's resume=DIR). Layout:
//   DIR/manifest.json   what the output depends on (inputs, options, model), written by the first run;
//                       a later run with another manifest is refused, so blocks of two runs never mix
//   DIR/ID.out          a finished block's output bytes
//   DIR/ID.done         its record (JSON: the block's counts), the completion marker
// Each file is written to ID.*.tmp, flushed to disk and renamed, the marker last: a block is finished iff
// its marker exists, and a file is never seen half-written. A block of a killed run without a marker is
// done again and its files replaced.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace lstmlm::tasks {

struct ResumeBlock {
  std::string output;
  nlohmann::json record;
};

class ResumeDir {
 public:
  // Creates `dir` (not its parents) or opens it. `manifest` is a JSON object. Throws UsageError (key
  // "resume") when `dir` holds another run's manifest (naming the first field that differs), is not a
  // directory or cannot be written; InputError when a file in it cannot be read.
  ResumeDir(std::string dir, const nlohmann::json& manifest);
  // A block finished by an earlier run: its output and record. `id`: letters, digits, '-' and '_'.
  std::optional<ResumeBlock> finished(const std::string& id) const;
  // Stores a finished block (output first, then its marker). Throws OutputError (disk full, ...).
  void commit(const std::string& id, std::string_view output, const nlohmann::json& record) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace lstmlm::tasks
