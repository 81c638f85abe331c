// The rows a record gives in a table (lstmlm/report/record.hpp, Table): the cells of each row in column
// order.
#pragma once
#include <functional>

#include "lstmlm/report/record.hpp"

namespace lstmlm::report {

// Calls `row` once per table row of `r` with one Value pointer per column (nullptr: no such field).
// Records of another kind than the table's give no row.
void table_rows(const Table& t, const Record& r,
                const std::function<void(const std::vector<const Value*>&)>& row);

}  // namespace lstmlm::report
