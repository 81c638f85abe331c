// The timed part of the bench task: one Engine per (workload, batch, length, threads) cell, warm-up
// calls, then repetitions of timed calls. Inputs and states are prepared outside the timed region.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <random>
#include <span>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/bench.hpp"
#include "lstmlm/tasks/sampler.hpp"

namespace lstmlm::tasks::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A few distinct input batches, used in turn, so that repeated calls do not always gather the same rows.
constexpr int kInputSets = 4;

struct Inputs {
  std::vector<Sequences> inputs, targets;
};

Inputs make_inputs(const Options& opt, int32_t vocab, int batch, int length) {
  Inputs in;
  std::mt19937_64 rng(opt.seed);
  std::uniform_int_distribution<int32_t> id(0, vocab - 1);
  size_t pos = 0;
  auto next = [&]() -> int32_t {
    if (opt.tokens.empty()) return id(rng);
    int32_t t = opt.tokens[pos];
    pos = (pos + 1) % opt.tokens.size();
    return t;
  };
  for (int s = 0; s < kInputSets; ++s) {
    Sequences x(static_cast<size_t>(batch)), y(static_cast<size_t>(batch));
    for (int r = 0; r < batch; ++r) {
      // Targets are the inputs shifted by one, as when scoring text.
      int32_t prev = next();
      for (int t = 0; t < length; ++t) {
        int32_t cur = next();
        x[static_cast<size_t>(r)].push_back(prev);
        y[static_cast<size_t>(r)].push_back(cur);
        prev = cur;
      }
    }
    in.inputs.push_back(std::move(x));
    in.targets.push_back(std::move(y));
  }
  return in;
}

// Sampling over a batch: `length` steps, each a one-token predict over the full vocabulary and one
// draw per row from the whole distribution (Sampler at temperature 1, the costliest common setting
// that touches every probability), each row with its own random stream.
struct Generation {
  Sampler sampler{SamplerParams{}};
  std::vector<Rng> rngs;
  std::vector<std::vector<int32_t>> history;
};

void generate(Engine& engine, Generation& g, Sequences& cur, std::vector<State>& states, MatrixRM& logp,
              int length) {
  for (int t = 0; t < length; ++t) {
    engine.predict(cur, states, logp);
    for (Eigen::Index r = 0; r < logp.rows(); ++r) {
      auto ri = static_cast<size_t>(r);
      std::span<const float> lp(logp.row(r).data(), static_cast<size_t>(logp.cols()));
      int32_t next = g.sampler.sample(lp, g.history[ri], g.rngs[ri]);
      g.history[ri].push_back(next);
      cur[ri].assign(1, next);
    }
  }
}

Row run_cell(const std::shared_ptr<const Model>& model, const std::string& name, const Options& opt,
             Workload w, int batch, int length, int threads, Precision precision) {
  EngineOptions eo;
  eo.threads = threads;
  eo.precision = precision;
  eo.fold = opt.fold;
  Engine engine(model, eo);
  Row row;
  row.model = name;
  row.shape = shape_string(model->config());
  row.workload = w;
  row.batch = batch;
  row.length = length;
  row.threads = engine.threads();
  row.isa = engine.kernels();
  row.build = build_kind();
  if (w == Workload::Generate) row.note = "sampler: temperature 1, full vocabulary";
  row.tokens_per_call = static_cast<double>(batch) * length;

  Inputs in = make_inputs(opt, model->vocab_size(), batch, length);
  const std::vector<State> zeros(static_cast<size_t>(batch), State::zeros(*model));
  std::vector<State> states;
  std::vector<std::vector<float>> score_out;
  MatrixRM logp;
  Sequences gen_cur;
  Generation gen;
  int set = 0;

  // Untimed: fresh states and (for generate) the first token of each row.
  auto prepare = [&] {
    set = (set + 1) % kInputSets;
    states = zeros;
    if (w == Workload::Generate) {
      gen_cur.assign(static_cast<size_t>(batch), {});
      gen.rngs.clear();
      gen.history.assign(static_cast<size_t>(batch), {});
      for (int r = 0; r < batch; ++r) {
        gen_cur[static_cast<size_t>(r)].assign(1, in.inputs[set][r][0]);
        gen.rngs.push_back(Rng::stream(opt.seed, static_cast<uint64_t>(r)));
        gen.history[static_cast<size_t>(r)].reserve(static_cast<size_t>(length));
      }
    }
  };
  auto call = [&] {
    switch (w) {
      case Workload::Score:
        engine.score(in.inputs[set], in.targets[set], states, score_out);
        break;
      case Workload::Predict:
        engine.predict(in.inputs[set], states, logp);
        break;
      case Workload::Generate:
        generate(engine, gen, gen_cur, states, logp, length);
        break;
      case Workload::Startup:
        break;
    }
  };

  for (int i = 0; i < opt.warmup; ++i) {
    prepare();
    call();
  }
  std::vector<double> latencies, rep_tps;
  double total_time = 0;
  for (int rep = 0; rep < std::max(1, opt.repetitions); ++rep) {
    double rep_time = 0;
    int64_t n = 0;
    do {
      prepare();
      auto t0 = Clock::now();
      call();
      double dt = seconds_since(t0);
      latencies.push_back(dt);
      rep_time += dt;
      ++n;
    } while (rep_time < opt.min_rep_seconds);
    rep_tps.push_back(static_cast<double>(n) * row.tokens_per_call / rep_time);
    row.calls += n;
    total_time += rep_time;
  }
  row.repetitions = static_cast<int>(rep_tps.size());
  double mean = std::accumulate(rep_tps.begin(), rep_tps.end(), 0.0) / static_cast<double>(rep_tps.size());
  double ss = 0;
  for (double v : rep_tps) ss += (v - mean) * (v - mean);
  row.tokens_per_s = mean;
  row.tokens_per_s_sd = rep_tps.size() > 1 ? std::sqrt(ss / static_cast<double>(rep_tps.size() - 1)) : 0.0;
  row.tokens_per_s_median = percentile(rep_tps, 50);
  row.calls_per_s = mean / row.tokens_per_call;
  row.latency_p50_us = percentile(latencies, 50) * 1e6;
  row.latency_p99_us = percentile(latencies, 99) * 1e6;
  double mean_call = total_time / static_cast<double>(row.calls);
  row.gflops = flops_per_call(model->config(), w, batch, length) / mean_call * 1e-9;
  return row;
}

}  // namespace

std::vector<Row> run(const std::shared_ptr<const Model>& model, const std::string& model_name,
                     const Options& opt, const Progress& progress) {
  for (int b : opt.batches)
    if (b < 1) throw UsageError("bench: batch sizes must be >= 1, got " + std::to_string(b));
  for (int l : opt.lengths)
    if (l < 1) throw UsageError("bench: sequence lengths must be >= 1, got " + std::to_string(l));
  for (int t : opt.threads)
    if (t < 0)
      throw UsageError("bench: thread counts must be >= 0 (0 = one per core), got " + std::to_string(t));
  if (opt.repetitions < 1) throw UsageError("bench: repetitions must be >= 1");
  if (opt.warmup < 0) throw UsageError("bench: warm-up runs must be >= 0");
  for (int32_t t : opt.tokens)
    if (t < 0 || t >= model->vocab_size())
      throw UsageError("bench: input token id " + std::to_string(t) + " is outside the vocabulary");

  if (opt.precisions.empty()) throw UsageError("bench: no precision to run");
  // Every precision is tried before the first cell runs: one the build lacks stops the run at once.
  for (Precision p : opt.precisions) {
    EngineOptions eo;
    eo.threads = 1;
    eo.precision = p;
    eo.fold = opt.fold;
    Engine probe(model, eo);
  }
  std::vector<Row> rows;
  for (Workload w : opt.workloads) {
    if (w == Workload::Startup) continue;
    for (int t : opt.threads)
      for (int b : opt.batches)
        for (int l : opt.lengths)
          for (Precision p : opt.precisions) {
            if (progress)
              progress(std::string(to_string(w)) + " batch " + std::to_string(b) + " length " +
                       std::to_string(l) + " threads " + std::to_string(t) +
                       (opt.precisions.size() > 1 ? " precision " + std::string(precision_name(p))
                                                  : std::string()));
            rows.push_back(run_cell(model, model_name, opt, w, b, l, t, p));
          }
  }
  return rows;
}

Row startup(const std::string& dir, const std::string& text, int threads, Precision precision) {
  auto t0 = Clock::now();
  auto model = Model::load(dir);
  double t_load = seconds_since(t0);
  auto t1 = Clock::now();
  std::vector<int32_t> ids;
  for (const Token& tok : model->tokenizer().tokenize(text))
    if (tok.id >= 0) ids.push_back(tok.id);
  double t_tok = seconds_since(t1);
  if (ids.empty()) {
    const auto& tk = model->tokenizer();
    ids.push_back(tk.bos_id() ? *tk.bos_id() : tk.eos_id() ? *tk.eos_id() : 0);
  }
  auto t2 = Clock::now();
  EngineOptions eo;
  eo.threads = threads;
  eo.precision = precision;
  Engine engine(model, eo);
  std::vector<State> states{State::zeros(*model)};
  MatrixRM logp;
  engine.predict(Sequences{ids}, states, logp);
  double t_pred = seconds_since(t2);
  double total = seconds_since(t0);

  Row row;
  row.model = std::filesystem::path(dir).filename().string();
  if (row.model.empty()) row.model = std::filesystem::path(dir).parent_path().filename().string();
  row.shape = shape_string(model->config());
  row.workload = Workload::Startup;
  row.batch = 1;
  row.length = static_cast<int>(ids.size());
  row.threads = engine.threads();
  row.repetitions = 1;
  row.calls = 1;
  row.tokens_per_call = static_cast<double>(ids.size());
  row.tokens_per_s = row.tokens_per_s_median = row.tokens_per_call / total;
  row.calls_per_s = 1.0 / total;
  row.latency_p50_us = row.latency_p99_us = total * 1e6;
  row.gflops = flops_per_call(model->config(), Workload::Startup, 1, row.length) / total * 1e-9;
  row.isa = engine.kernels();
  row.build = build_kind();
  char buf[160];
  std::snprintf(buf, sizeof buf, "load %.2f ms + tokenize %.3f ms + engine and first predict %.3f ms",
                t_load * 1e3, t_tok * 1e3, t_pred * 1e3);
  row.note = buf;
  return row;
}

}  // namespace lstmlm::tasks::bench
