// `lstmlm score --input-format jsonl`: the perplexity filter over JSONL documents (docs/scoring.md, "JSONL
// documents"). stdout carries only the kept documents, with their fields added, in input order.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tasks/shard.hpp"
#include "options.hpp"

namespace lstmlm::cli {

struct JsonlRun {
  std::string model_dir;
  std::vector<std::string> files;
  tasks::ScoreOptions score;  // the line conventions (line_options); the window resolved on the model
  WindowArgs window;
  int threads = 0;
  Precision precision = Precision::Fp32;
  EmbeddingFold fold = EmbeddingFold::Auto;
  std::string progress = "auto";
  std::string text_field = "text";
  bool skip_errors = false;  // --on-error skip
  std::optional<double> min_perplexity, max_perplexity;
  std::optional<tasks::Shard> shard;  // --shard K/N
  std::string resume_dir;             // --resume DIR ("": none)
};

// Runs the filter; returns the exit status. A bad document under --on-error fail is an InputError after
// every earlier document was written.
int run_score_jsonl(const JsonlRun& r);

}  // namespace lstmlm::cli
