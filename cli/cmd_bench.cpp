// `lstmlm bench`: llama-bench-shaped throughput and latency table for a model directory or a random
// model of a given shape. The measuring is in the library (lstmlm/tasks/bench.hpp); this file parses
// options, prepares inputs (load and tokenization stay outside every timing) and prints the rows.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/bench.hpp"
#include "output.hpp"

namespace lstmlm::cli {

namespace {

struct BenchArgs {
  std::string model_dir, shape, input, output = "md";
  std::string workloads = "score,predict,generate", batches = "1", lengths = "32", threads = "0";
  int repetitions = 5, warmup = 1;
  double min_time = 0.1;
  uint64_t seed = 1;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

std::vector<int> int_list(const std::string& s, const char* option) {
  std::vector<int> out;
  for (const auto& p : split(s)) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(p, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != p.size() || p.empty())
      throw UsageError(std::string("bench: ") + option + " expects a comma list of integers, got '" + s +
                       "'");
    out.push_back(v);
  }
  if (out.empty()) throw UsageError(std::string("bench: ") + option + " needs at least one value");
  return out;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the --input file");
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(std::move(l));
  }
  return lines;
}

std::string model_name(const std::string& dir) {
  std::filesystem::path p(dir);
  std::string name = p.filename().string();
  return name.empty() ? p.parent_path().filename().string() : name;
}

int run(const BenchArgs& a) {
  if (a.model_dir.empty() == a.shape.empty())
    throw UsageError("bench: give exactly one of -m/--model DIR and --shape V,E,H,L");
  bench::Options opt;
  opt.workloads.clear();
  bool want_startup = false;
  for (const auto& w : split(a.workloads)) {
    auto wl = bench::parse_workload(w);
    if (wl == bench::Workload::Startup)
      want_startup = true;
    else
      opt.workloads.push_back(wl);
  }
  opt.batches = int_list(a.batches, "-b/--batch-size");
  opt.lengths = int_list(a.lengths, "-s/--seq-len");
  opt.threads = int_list(a.threads, "-t/--threads");
  opt.repetitions = a.repetitions;
  opt.warmup = a.warmup;
  opt.min_rep_seconds = a.min_time;
  opt.seed = a.seed;
  bench::format_rows({}, a.output);  // rejects an unknown format before any work is done

  std::shared_ptr<const Model> model;
  std::string name;
  if (!a.shape.empty()) {
    auto s = int_list(a.shape, "--shape");
    if (s.size() != 4) throw UsageError("bench: --shape expects V,E,H,L, got '" + a.shape + "'");
    model = Model::random(s[0], s[1], s[2], s[3], a.seed);
    name = "random";
    if (want_startup) throw UsageError("bench: the startup workload needs -m/--model DIR");
  } else {
    model = Model::load(a.model_dir);
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

  bench::Progress progress;
  if (stderr_is_terminal())
    progress = [](const std::string& what) { std::fprintf(stderr, "bench: %s\n", what.c_str()); };
  std::vector<bench::Row> rows;
  if (want_startup) rows.push_back(bench::startup(a.model_dir, first_line, opt.threads.front()));
  auto timed = bench::run(model, name, opt, progress);
  rows.insert(rows.end(), timed.begin(), timed.end());
  Output out;
  out.write(bench::format_rows(rows, a.output));
  out.flush();
  return 0;
}

}  // namespace

Subcommand setup_bench(CLI::App& parent) {
  auto args = std::make_shared<BenchArgs>();
  Subcommand s;
  s.app = parent.add_subcommand("bench", "Measure throughput and latency (llama-bench style)");
  auto* app = s.app;
  app->add_option("-m,--model", args->model_dir, "Model directory");
  app->add_option("--shape", args->shape, "Random weights of this shape instead of a model: V,E,H,L");
  app->add_option("-w,--workload", args->workloads,
                  "Comma list of score, predict, generate, startup (startup: load + tokenize + first "
                  "predict, needs -m)")
      ->capture_default_str();
  app->add_option("-b,--batch-size", args->batches, "Comma list of batch sizes")->capture_default_str();
  app->add_option("-s,--seq-len", args->lengths, "Comma list of sequence lengths (tokens per row)")
      ->capture_default_str();
  app->add_option("-t,--threads", args->threads, "Comma list of thread counts (0 = one per core)")
      ->capture_default_str();
  app->add_option("-r,--repetitions", args->repetitions, "Timed repetitions per cell")->capture_default_str();
  app->add_option("--warmup", args->warmup, "Untimed calls before the repetitions")->capture_default_str();
  app->add_option("--min-time", args->min_time,
                  "Seconds each repetition repeats the call for (at least once)")
      ->capture_default_str();
  app->add_option("--seed", args->seed, "Seed of the synthetic token ids and of --shape's weights")
      ->capture_default_str();
  app->add_option("--input", args->input, "Cut the inputs from this text file, tokenized with the model");
  app->add_option("-o,--output", args->output, "Output format: md, csv, json or jsonl")
      ->capture_default_str();
  s.run = [args] { return run(*args); };
  return s;
}

}  // namespace lstmlm::cli
