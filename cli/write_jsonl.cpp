// jsonl: one JSON object per record and line, fields in record order.
#include "emit.hpp"

namespace lstmlm::cli {

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

}  // namespace lstmlm::cli
