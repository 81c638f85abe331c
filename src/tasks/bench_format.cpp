// Bench rows as text: a markdown table for people, csv/json/jsonl for scripts (bench/compare reads jsonl).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/bench.hpp"

namespace lstmlm::bench {

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

nlohmann::ordered_json to_json(const Row& r) {
  return {{"model", r.model},
          {"shape", r.shape},
          {"workload", to_string(r.workload)},
          {"batch", r.batch},
          {"length", r.length},
          {"threads", r.threads},
          {"repetitions", r.repetitions},
          {"calls", r.calls},
          {"tokens_per_call", r.tokens_per_call},
          {"tokens_per_s", r.tokens_per_s},
          {"tokens_per_s_sd", r.tokens_per_s_sd},
          {"tokens_per_s_median", r.tokens_per_s_median},
          {"calls_per_s", r.calls_per_s},
          {"latency_p50_us", r.latency_p50_us},
          {"latency_p99_us", r.latency_p99_us},
          {"gflops", r.gflops},
          {"isa", r.isa},
          {"build", r.build},
          {"note", r.note}};
}

// RFC 4180: quote a field holding a comma, a quote or a line break; double inner quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string md(const std::vector<Row>& rows) {
  std::string s =
      "| model | shape | workload | batch | length | threads | tokens/s | calls/s | p50 µs | p99 µs | "
      "GFLOP/s "
      "| isa | build | note |\n"
      "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|\n";
  for (const Row& r : rows) {
    s += "| " + r.model + " | " + r.shape + " | " + to_string(r.workload) + " | " + std::to_string(r.batch) +
         " | " + std::to_string(r.length) + " | " + std::to_string(r.threads) + " | " +
         fixed(r.tokens_per_s, 0) + " ± " + fixed(r.tokens_per_s_sd, 0) + " | " + fixed(r.calls_per_s, 1) +
         " | " + fixed(r.latency_p50_us, 2) + " | " + fixed(r.latency_p99_us, 2) + " | " +
         fixed(r.gflops, 2) + " | " + r.isa + " | " + r.build + " | " + r.note + " |\n";
  }
  return s;
}

std::string csv(const std::vector<Row>& rows) {
  std::string s;
  auto header = to_json(Row{});
  // Appending piecewise: GCC 12 warns falsely (-Wrestrict) on `(cond ? "" : ",") + std::string`.
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it != header.begin()) s += ',';
    s += it.key();
  }
  s += "\n";
  for (const Row& r : rows) {
    auto j = to_json(r);
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it != j.begin()) s += ',';
      s += csv_field(it->is_string() ? it->get<std::string>() : it->dump());
    }
    s += "\n";
  }
  return s;
}

}  // namespace

std::string format_rows(const std::vector<Row>& rows, const std::string& format) {
  if (format == "md") return md(rows);
  if (format == "csv") return csv(rows);
  if (format == "json") {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const Row& r : rows) a.push_back(to_json(r));
    return a.dump(2) + "\n";
  }
  if (format == "jsonl") {
    std::string s;
    for (const Row& r : rows) s += to_json(r).dump() + "\n";
    return s;
  }
  throw UsageError("bench: unknown output format '" + format + "', expected md, csv, json or jsonl");
}

}  // namespace lstmlm::bench
