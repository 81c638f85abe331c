// json: every record in one array, indented by 2 (as nlohmann::json::dump(2)), then a newline.
#include "lstmlm/report/record.hpp"

namespace lstmlm::report {

namespace {

class JsonWriter final : public Writer {
 public:
  void record(const Record& r, std::string& /*out*/) override {
    all_.list.push_back(Value::of_record(r.fields));
  }
  void end(std::string& out) override {
    append_json_pretty(out, all_, 0);
    out += '\n';
  }

 private:
  Value all_ = Value::of_list({});
};

}  // namespace

std::unique_ptr<Writer> make_json_writer() { return std::make_unique<JsonWriter>(); }

}  // namespace lstmlm::report
