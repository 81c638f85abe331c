// csv (RFC 4180): a header line, then one line per row; a field holding a comma, a quote or a line
// break is quoted with inner quotes doubled. Non-string cells are written as in JSON.
#include "lstmlm/report/record.hpp"
#include "report/table_rows.hpp"

namespace lstmlm::report {

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

class CsvWriter final : public Writer {
 public:
  void begin(const Table& t, std::string& out) override {
    table_ = t;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      if (c) out += ',';
      out += t.columns[c];
    }
    out += '\n';
  }
  void record(const Record& r, std::string& out) override {
    table_rows(table_, r, [&](const std::vector<const Value*>& cells) {
      for (size_t c = 0; c < cells.size(); ++c) {
        if (c) out += ',';
        if (!cells[c]) continue;
        std::string text;
        if (cells[c]->kind == Value::Kind::Str)
          text = cells[c]->s;
        else
          append_json(text, *cells[c], true);
        out += csv_field(text);
      }
      out += '\n';
    });
  }

 private:
  Table table_;
};

}  // namespace

std::unique_ptr<Writer> make_csv_writer() { return std::make_unique<CsvWriter>(); }

}  // namespace lstmlm::report
