#include "bench_rows.hpp"

namespace lstmlm::cli {

// One bench row; the field names are the csv/json/jsonl keys, in this order.
Record bench_record(const bench::Row& r) {
  return {"bench.row",
          {{"model", Value::str(r.model)},
           {"shape", Value::str(r.shape)},
           {"workload", Value::str(bench::to_string(r.workload))},
           {"batch", Value::integer(r.batch)},
           {"length", Value::integer(r.length)},
           {"threads", Value::integer(r.threads)},
           {"repetitions", Value::integer(r.repetitions)},
           {"calls", Value::integer(r.calls)},
           {"tokens_per_call", Value::real(r.tokens_per_call)},
           {"tokens_per_s", Value::real(r.tokens_per_s)},
           {"tokens_per_s_sd", Value::real(r.tokens_per_s_sd)},
           {"tokens_per_s_median", Value::real(r.tokens_per_s_median)},
           {"calls_per_s", Value::real(r.calls_per_s)},
           {"latency_p50_us", Value::real(r.latency_p50_us)},
           {"latency_p99_us", Value::real(r.latency_p99_us)},
           {"gflops", Value::real(r.gflops)},
           {"isa", Value::str(r.isa)},
           {"build", Value::str(r.build)},
           {"note", Value::str(r.note)}},
          true};
}

Table bench_table() {
  Table t{"bench.row", {}};
  for (const auto& f : bench_record(bench::Row{}).fields) t.columns.push_back(f.name);
  return t;
}

}  // namespace lstmlm::cli
