#include "report/table_rows.hpp"

#include <algorithm>

namespace lstmlm::report {

namespace {

const Value* field(const Fields& fs, const std::string& name) {
  for (const auto& f : fs)
    if (f.name == name && !f.display) return &f.value;
  return nullptr;
}

}  // namespace

void table_rows(const Table& t, const Record& r,
                const std::function<void(const std::vector<const Value*>&)>& row) {
  if (r.kind != t.kind) return;
  std::vector<const Value*> cells(t.columns.size());
  bool flat = std::all_of(t.columns.begin(), t.columns.end(),
                          [&](const std::string& c) { return field(r.fields, c) != nullptr; });
  const Value* nested = nullptr;
  if (!flat)
    for (const auto& f : r.fields)
      if (f.value.kind == Value::Kind::List && !f.display) {
        nested = &f.value;
        break;
      }
  if (!nested) {
    for (size_t c = 0; c < cells.size(); ++c) cells[c] = field(r.fields, t.columns[c]);
    row(cells);
    return;
  }
  for (size_t i = 0; i < nested->list.size(); ++i) {
    const Value position = Value::integer(static_cast<int64_t>(i + 1));
    for (size_t c = 0; c < cells.size(); ++c) {
      const Value* v = field(nested->list[i].fields, t.columns[c]);
      if (!v && t.columns[c] == "position") v = &position;
      cells[c] = v ? v : field(r.fields, t.columns[c]);
    }
    row(cells);
  }
}

}  // namespace lstmlm::report
