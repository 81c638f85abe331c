#include "report/table_rows.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace lstmlm::report {

namespace {

// A record's data fields by name. A table row looks up every column, so a record of thousands of fields
// (a rescore list with one score column per system) is indexed once instead of searched per column.
class FieldIndex {
 public:
  explicit FieldIndex(const Fields& fs) : fs_(fs) {
    if (fs.size() <= kLinear) return;
    map_.reserve(fs.size());
    for (const auto& f : fs)
      if (!f.display) map_.emplace(f.name, &f.value);  // the first of a name wins, as in the linear search
  }
  const Value* operator()(const std::string& name) const {
    if (fs_.size() > kLinear) {
      auto it = map_.find(name);
      return it == map_.end() ? nullptr : it->second;
    }
    for (const auto& f : fs_)
      if (f.name == name && !f.display) return &f.value;
    return nullptr;
  }

 private:
  static constexpr size_t kLinear = 32;
  const Fields& fs_;
  std::unordered_map<std::string_view, const Value*> map_;
};

}  // namespace

void table_rows(const Table& t, const Record& r,
                const std::function<void(const std::vector<const Value*>&)>& row) {
  if (r.kind != t.kind) return;
  std::vector<const Value*> cells(t.columns.size());
  const FieldIndex field(r.fields);
  bool flat = std::all_of(t.columns.begin(), t.columns.end(),
                          [&](const std::string& c) { return field(c) != nullptr; });
  const Value* nested = nullptr;
  if (!flat)
    for (const auto& f : r.fields)
      if (f.value.kind == Value::Kind::List && !f.display) {
        nested = &f.value;
        break;
      }
  if (!nested) {
    for (size_t c = 0; c < cells.size(); ++c) cells[c] = field(t.columns[c]);
    row(cells);
    return;
  }
  for (size_t i = 0; i < nested->list.size(); ++i) {
    const Value position = Value::integer(static_cast<int64_t>(i + 1));
    const FieldIndex element(nested->list[i].fields);
    for (size_t c = 0; c < cells.size(); ++c) {
      const Value* v = element(t.columns[c]);
      if (!v && t.columns[c] == "position") v = &position;
      cells[c] = v ? v : field(t.columns[c]);
    }
    row(cells);
  }
}

}  // namespace lstmlm::report
