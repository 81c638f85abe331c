// jsonl: one JSON object per record and line, fields in record order.
#include "lstmlm/report/record.hpp"

namespace lstmlm::report {

namespace {

class JsonlWriter final : public Writer {
 public:
  void record(const Record& r, std::string& out) override {
    append_json(out, r.fields, false);
    out += '\n';
  }
};

}  // namespace

std::unique_ptr<Writer> make_jsonl_writer() { return std::make_unique<JsonlWriter>(); }

}  // namespace lstmlm::report
