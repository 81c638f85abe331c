// Bench rows (lstmlm/tasks/bench.hpp, measured by the library) as output records for the writers:
// md for people, csv/json/jsonl for scripts (bench/compare reads jsonl).
#pragma once
#include "lstmlm/report/record.hpp"
#include "lstmlm/tasks/bench.hpp"

namespace lstmlm::report {

Record bench_record(const tasks::bench::Row& r);
// The csv header / md table: every field of a row, in record order.
Table bench_table();

}  // namespace lstmlm::report
