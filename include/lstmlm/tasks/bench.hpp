// Benchmark task (llama-bench style): runs timed workloads on a Model and returns typed rows (the CLI
// prints them).
// Load and tokenization are never inside the timed region; startup() measures them on purpose.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lstmlm/model.hpp"
#include "lstmlm/precision.hpp"

namespace lstmlm::tasks::bench {

enum class Workload {
  Score,     // Engine::score: log-probs at every step, target gathered
  Predict,   // Engine::predict: last step only, full distribution
  Generate,  // sampling loop: one step per token, greedy argmax of the full distribution
  Startup,   // load + tokenize + first predict, measured once from a model directory
};
const char* to_string(Workload w);
// Parses "score" | "predict" | "generate" | "startup"; throws UsageError otherwise.
Workload parse_workload(const std::string& s);

struct Options {
  std::vector<Workload> workloads{Workload::Score, Workload::Predict, Workload::Generate};
  std::vector<int> batches{1};
  std::vector<int> lengths{32};
  std::vector<int> threads{0};  // 0 = one per core
  // Kernel precisions (EngineOptions::precision), each cell run once per precision, in this order; a row
  // names the one that ran in `isa` ("bf16/avx512"). One the build lacks is a UsageError before any cell.
  std::vector<Precision> precisions{Precision::Fp32};
  EmbeddingFold fold = EmbeddingFold::Auto;  // EngineOptions::fold of every cell
  int repetitions = 5;
  int warmup = 1;                // untimed calls before the repetitions of each cell
  double min_rep_seconds = 0.1;  // each repetition repeats the call until this much time has passed
  uint64_t seed = 1;             // synthetic token ids
  // Token stream to cut inputs from instead of synthetic ids (e.g. a tokenized --input file).
  std::vector<int32_t> tokens;
};

struct Row {
  std::string model;  // directory name, or "random" for --shape
  std::string shape;  // "V=554 E=100 H=100x1"
  Workload workload = Workload::Score;
  int batch = 0, length = 0, threads = 0;
  int repetitions = 0;
  int64_t calls = 0;           // timed calls over all repetitions
  double tokens_per_call = 0;  // batch * length
  double tokens_per_s = 0;     // mean over repetitions
  double tokens_per_s_sd = 0;  // sample standard deviation over repetitions (0 for one repetition)
  double tokens_per_s_median = 0;
  double calls_per_s = 0;     // tokens_per_s / tokens_per_call
  double latency_p50_us = 0;  // per-call latency percentiles over every timed call
  double latency_p99_us = 0;
  double gflops = 0;  // nominal FLOPs (flops_per_call) / mean call time
  std::string isa;    // the kernels that ran, Engine::kernels() (e.g. "fp32/avx2")
  std::string build;  // build_kind()
  std::string note;   // e.g. which sampler generate used
};

// Nominal FLOPs of one call (see docs/performance.md): per token and layer 2*4H*(in+H_out)
// (+ 2*P*H for a projected layer), plus 2*H_last*V for the output projection where it is computed:
// at every step for score and generate, at the last step of each row for predict/startup.
double flops_per_call(const ModelConfig& c, Workload w, int batch, int length);

// Linear interpolation between closest ranks (numpy.percentile's default); p in [0, 100].
// Throws UsageError on an empty sample.
double percentile(std::vector<double> sample, double p);

// How the library was compiled, e.g. "native" or "portable x86-64-v3+asan+ubsan".
std::string build_kind();
// "V=554 E=100 H=100x1" (layers of equal width) or "V=.. E=.. H=650,650" otherwise.
std::string shape_string(const ModelConfig& c);

// Called before each cell is run (progress on stderr in the CLI). May be empty.
using Progress = std::function<void(const std::string& what)>;

// Runs every workload x threads x batch x length x precision cell of `opt` (Startup is skipped here).
std::vector<Row> run(const std::shared_ptr<const Model>& model, const std::string& model_name,
                     const Options& opt, const Progress& progress = {});

// Time to first result: Model::load(dir) + tokenize(text) + one predict, measured once, cold.
// A text that tokenizes to nothing is predicted from the model's bos/eos token (or token 0).
Row startup(const std::string& dir, const std::string& text, int threads,
            Precision precision = Precision::Fp32);

// Rows are printed by the CLI's writers (cli/bench_rows.hpp: md, csv, json, jsonl).

}  // namespace lstmlm::tasks::bench
