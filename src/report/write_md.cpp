// md: a markdown table for people (bench rows: tokens/s ± sd, calls/s, latency percentiles, GFLOP/s).
#include <stdexcept>

#include "lstmlm/report/record.hpp"

namespace lstmlm::report {

namespace {

class MdWriter final : public Writer {
 public:
  void begin(const Table& t, std::string& out) override {
    if (t.kind != "bench.row")
      throw std::logic_error("the md format has no layout for " + t.kind + " tables");
    out +=
        "| model | shape | workload | batch | length | threads | tokens/s | calls/s | p50 µs | p99 µs | "
        "GFLOP/s "
        "| isa | build | note |\n"
        "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|\n";
  }
  void record(const Record& r, std::string& out) override {
    if (r.kind != "bench.row")
      throw std::logic_error("the md format has no layout for " + r.kind + " records");
    auto s = [&](const char* k) { return r.at(k).s; };
    auto i = [&](const char* k) { return std::to_string(r.at(k).i); };
    auto f = [&](const char* k, int decimals) { return fixed(r.at(k).d, decimals); };
    out += "| " + s("model") + " | " + s("shape") + " | " + s("workload") + " | " + i("batch") + " | " +
           i("length") + " | " + i("threads") + " | " + f("tokens_per_s", 0) + " ± " +
           f("tokens_per_s_sd", 0) + " | " + f("calls_per_s", 1) + " | " + f("latency_p50_us", 2) + " | " +
           f("latency_p99_us", 2) + " | " + f("gflops", 2) + " | " + s("isa") + " | " + s("build") + " | " +
           s("note") + " |\n";
  }
};

}  // namespace

std::unique_ptr<Writer> make_md_writer() { return std::make_unique<MdWriter>(); }

}  // namespace lstmlm::report
