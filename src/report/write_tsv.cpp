// tsv: one table with a header line; cells tab-separated (strings escaped by escape_text, booleans 1/0,
// null empty).
#include "lstmlm/report/record.hpp"
#include "report/table_rows.hpp"

namespace lstmlm::report {

namespace {

class TsvWriter final : public Writer {
 public:
  void begin(const Table& t, std::string& out) override {
    table_ = t;
    for (size_t c = 0; c < t.columns.size(); ++c) out += (c ? "\t" : "") + t.columns[c];
    out += '\n';
  }
  void record(const Record& r, std::string& out) override {
    table_rows(table_, r, [&](const std::vector<const Value*>& cells) {
      for (size_t c = 0; c < cells.size(); ++c) {
        if (c) out += '\t';
        if (!cells[c]) continue;
        out += cells[c]->kind == Value::Kind::Str ? escape_text(cells[c]->s) : cell(*cells[c]);
      }
      out += '\n';
    });
  }

 private:
  Table table_;
};

}  // namespace

std::unique_ptr<Writer> make_tsv_writer() { return std::make_unique<TsvWriter>(); }

}  // namespace lstmlm::report
