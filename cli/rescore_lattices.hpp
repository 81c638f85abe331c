// `lstmlm rescore` on lattices (Kaldi text, HTK SLF): the n-best, the 1-best or the rescored lattice of each.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emit.hpp"
#include "lstmlm/lattice.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::cli {

struct LatticeCli {
  std::string model_dir, words;
  std::vector<std::string> files;
  std::optional<LatticeFormat> input;   // none: from each file's content
  std::optional<LatticeFormat> output;  // a lattice out instead of records
  Format format = Format::Text;         // of the records
  std::vector<std::pair<std::string, double>> weights;
  double lm_weight = 1.0, word_penalty = 0.0, beam = 0;
  int max_ngram_order = 0;
  int64_t max_tokens_per_node = 1000, n_best = 1;
  bool best = false, no_eos = false;
  tasks::OovPolicy oov = tasks::OovPolicy::Skip;
  int batch_size = 64, threads = 0;
};

// True when the first input is a lattice file (detect_lattice), for --input-format auto.
bool lattice_input(const std::vector<std::string>& files);

int rescore_lattices(const LatticeCli& o);

}  // namespace lstmlm::cli
