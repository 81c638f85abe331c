// `lstmlm bench`: llama-bench-shaped throughput and latency table for a model directory or a random
// model of a given shape. The measuring is in the library (lstmlm/tasks/bench.hpp); this file parses
// options, prepares inputs (load and tokenization stay outside every timing) and prints the rows.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "emit.hpp"
#include "limits.hpp"
#include "line_reader.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/report/bench.hpp"
#include "lstmlm/tasks/bench.hpp"
#include "lstmlm/tasks/request.hpp"
#include "options.hpp"
#include "output.hpp"

namespace lstmlm::cli {

using report::bench_record;
using report::bench_table;

namespace bench_cmd {

struct BenchArgs {
  std::string model_dir, shape, input;
  std::string cell_name;               // --cell, of --shape's layers
  CellType cell = LayerConfig{}.cell;  // parsed by check()
  Format output = Format::Md;
  std::string workloads = "score,predict,generate", batches = "1", lengths = "32", threads = "0";
  std::string precisions = "fp32";
  EmbeddingFold fold = EmbeddingFold::Auto;
  int repetitions = 5, warmup = 1;
  double min_time = 0.1;
  uint64_t seed = 1;
  // Filled by check(), before any work is done.
  tasks::bench::Options opt;
  bool want_startup = false;
  std::vector<int> shape_values;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

// The --input file's lines, read like score's input (BOM, CRLF, the line limit).
std::vector<std::string> read_lines(const std::string& path) {
  check_readable({path}, "the --input file");
  LineReader in({path});
  in.next_file();
  std::vector<std::string> lines;
  for (std::string l; in.next(l);) lines.push_back(std::move(l));
  return lines;
}

std::string model_name(const std::string& dir) {
  std::filesystem::path p(dir);
  std::string name = p.filename().string();
  return name.empty() ? p.parent_path().filename().string() : name;
}

// Every option refused before a model is loaded or a weight allocated.
void check(BenchArgs& a) {
  if (a.model_dir.empty() == a.shape.empty())
    throw UsageError("bench: give exactly one of -m/--model DIR and --shape V,E,H,L");
  if (!a.cell_name.empty()) {
    if (a.shape.empty())
      throw UsageError("bench: --cell applies to --shape (a model directory names its cells)");
    const auto& cells = tasks::cell_choices().names();
    if (std::find(cells.begin(), cells.end(), a.cell_name) == cells.end()) {
      std::string list;
      for (size_t i = 0; i < cells.size(); ++i)
        list += (i == 0 ? "" : i + 1 == cells.size() ? " or " : ", ") + cells[i];
      throw UsageError("bench: --cell expects " + list + ", got '" + a.cell_name + "'");
    }
    a.cell = tasks::cell_choices().parse(a.cell_name);
  }
  tasks::bench::Options& opt = a.opt;
  opt.workloads.clear();
  for (const auto& w : split(a.workloads)) {
    auto wl = tasks::bench::parse_workload(w);
    if (wl == tasks::bench::Workload::Startup)
      a.want_startup = true;
    else
      opt.workloads.push_back(wl);
  }
  opt.batches = int_list(a.batches, "-b/--batch-size", 1, kMaxBatch);
  opt.lengths = int_list(a.lengths, "-s/--seq-len", 1, kMaxBatch);
  opt.threads = int_list(a.threads, "-t/--threads", 0, kMaxThreads);
  opt.precisions = precision_list(a.precisions);
  opt.fold = a.fold;
  opt.repetitions = a.repetitions;
  opt.warmup = a.warmup;
  opt.min_rep_seconds = a.min_time;
  opt.seed = a.seed;
  if (!a.shape.empty()) {
    auto s = split(a.shape);
    if (s.size() != 4) throw UsageError("bench: --shape expects V,E,H,L, got '" + a.shape + "'");
    a.shape_values = {
        int_list(s[0], "--shape V", 1, kMaxVocab)[0], int_list(s[1], "--shape E", 0, kMaxEmbedding)[0],
        int_list(s[2], "--shape H", 1, kMaxHidden)[0], int_list(s[3], "--shape L", 1, kMaxLayers)[0]};
    if (a.want_startup) throw UsageError("bench: the startup workload needs -m/--model DIR");
  }
}

int run(const BenchArgs& a) {
  tasks::bench::Options opt = a.opt;
  std::shared_ptr<const Model> model;
  std::string name;
  if (!a.shape.empty()) {
    const auto& s = a.shape_values;
    model = Model::random(s[0], s[1], s[2], s[3], a.seed, a.cell);
    name = "random";
  } else {
    model = load_model(a.model_dir);
    name = model_name(a.model_dir);
  }
  std::string first_line = "the";
  if (!a.input.empty()) {
    auto lines = read_lines(a.input);
    for (const auto& l : lines) {
      for (const Token& t : model->tokenizer().tokenize(l))
        if (t.id >= 0) opt.tokens.push_back(t.id);
      if (auto eos = model->tokenizer().eos_id()) opt.tokens.push_back(*eos);
    }
    for (const auto& l : lines)
      if (!l.empty()) {
        first_line = l;
        break;
      }
    if (opt.tokens.empty()) throw InputError(a.input + ": no in-vocabulary token to benchmark with");
  }

  // Called before each cell: a signal stops the run there (no row is written then).
  const bool terminal = stderr_is_terminal();
  tasks::bench::Progress progress = [terminal](const std::string& what) {
    check_interrupted();
    if (terminal) std::fprintf(stderr, "bench: %s\n", what.c_str());
  };
  std::vector<tasks::bench::Row> rows;
  if (a.want_startup)
    for (Precision p : opt.precisions)
      rows.push_back(tasks::bench::startup(a.model_dir, first_line, opt.threads.front(), p));
  auto timed = tasks::bench::run(model, name, opt, progress);
  rows.insert(rows.end(), timed.begin(), timed.end());
  Emitter out(a.output);
  out.begin(bench_table());
  for (const auto& r : rows) out.emit(bench_record(r));
  out.end();
  return 0;
}

}  // namespace bench_cmd

Subcommand setup_bench(CLI::App& parent) {
  using namespace bench_cmd;
  auto args = std::make_shared<BenchArgs>();
  Subcommand s;
  s.app = parent.add_subcommand("bench", "Measure throughput and latency (llama-bench style)");
  auto* app = s.app;
  add_model_option(*app, args->model_dir, false);
  app->add_option("--shape", args->shape,
                  "Random weights of this shape instead of a model: V,E,H,L (V in [1, 268435456], E in [0, "
                  "65536], H in [1, 65536], L in [1, 256])");
  app->add_option(
      "--cell", args->cell_name,
      "The cell of --shape's layers: lstm (the default), gru (reset_after, as nn.GRU) or rnn (tanh)");
  app->add_option("-w,--workload", args->workloads,
                  "Comma list of score, predict, generate, startup (startup: load + tokenize + first "
                  "predict, needs -m)")
      ->capture_default_str();
  app->add_option("-b,--batch-size", args->batches, "Comma list of batch sizes, each in [1, 1000000]")
      ->capture_default_str();
  app->add_option("-s,--seq-len", args->lengths,
                  "Comma list of sequence lengths (tokens per row), each in [1, 1000000]")
      ->capture_default_str();
  app->add_option(
         "-t,--threads", args->threads,
         "Comma list of thread counts, each in [0, " + std::to_string(kMaxThreads) + "] (0 = one per core)")
      ->capture_default_str();
  app->add_option("--precision", args->precisions,
                  "Comma list of kernel precisions, each fp32, bf16 or int8 (docs/precision.md); every cell "
                  "runs once per precision and its row names it in isa (\"bf16/avx512\"); one this build or "
                  "CPU lacks is an error before any cell runs")
      ->capture_default_str();
  add_fold_option(*app, args->fold);
  app->add_option("-r,--repetitions", args->repetitions, "Timed repetitions per cell")
      ->check(int_range(1, kMaxRepetitions))
      ->capture_default_str();
  app->add_option("--warmup", args->warmup, "Untimed calls before the repetitions")
      ->check(int_range(0, kMaxRepetitions))
      ->capture_default_str();
  app->add_option("--min-time", args->min_time,
                  "Seconds each repetition repeats the call for (at least once)")
      ->check(real_range(0, kMaxMinTime))
      ->capture_default_str();
  app->add_option("--seed", args->seed, "Seed of the synthetic token ids and of --shape's weights")
      ->check(uint64_value())
      ->capture_default_str();
  app->add_option("-f,--input", args->input, "Cut the inputs from this text file, tokenized with the model");
  add_format_option(*app, args->output, {Format::Md, Format::Csv, Format::Json, Format::Jsonl},
                    "-o,--output");
  s.check = [args] { check(*args); };
  s.run = [args] { return run(*args); };
  return s;
}

}  // namespace lstmlm::cli
