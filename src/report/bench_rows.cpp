#include "lstmlm/report/bench.hpp"

namespace lstmlm::report {

// One bench row; the field names are the csv/json/jsonl keys, in this order ("type" in json/jsonl only).
Record bench_record(const tasks::bench::Row& r) {
  return {"bench.row",
          {{"type", Value::str("bench")},
           {"model", Value::str(r.model)},
           {"shape", Value::str(r.shape)},
           {"workload", Value::str(tasks::bench::to_string(r.workload))},
           {"batch", Value::integer(r.batch)},
           {"length", Value::integer(r.length)},
           {"threads", Value::integer(r.threads)},
           {"repetitions", Value::integer(r.repetitions)},
           {"calls", Value::integer(r.calls)},
           {"tokens_per_call", Value::num9(r.tokens_per_call)},
           {"tokens_per_s", Value::num9(r.tokens_per_s)},
           {"tokens_per_s_sd", Value::num9(r.tokens_per_s_sd)},
           {"tokens_per_s_median", Value::num9(r.tokens_per_s_median)},
           {"calls_per_s", Value::num9(r.calls_per_s)},
           {"latency_p50_us", Value::num9(r.latency_p50_us)},
           {"latency_p99_us", Value::num9(r.latency_p99_us)},
           {"gflops", Value::num9(r.gflops)},
           {"isa", Value::str(r.isa)},
           {"build", Value::str(r.build)},
           {"note", Value::str(r.note)}}};
}

Table bench_table() {
  Table t{"bench.row", {}};
  // "type" tells jsonl records apart; a table holds one kind, so its columns leave it out.
  for (const auto& f : bench_record(tasks::bench::Row{}).fields)
    if (f.name != "type") t.columns.push_back(f.name);
  return t;
}

}  // namespace lstmlm::report
