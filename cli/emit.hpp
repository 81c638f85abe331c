// The CLI's end of the report layer (lstmlm/report/record.hpp): an Emitter writes a subcommand's records
// through the Writer of the chosen format to stdout.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/report/record.hpp"
#include "output.hpp"

namespace lstmlm::cli {

// The records and formats of the report layer, by their short names in the CLI.
using report::append_json;
using report::append_json_pretty;
using report::cell;
using report::escape_text;
using report::Field;
using report::Fields;
using report::fixed;
using report::Format;
using report::format_name;
using report::json_string;
using report::make_writer;
using report::parse_format;
using report::Record;
using report::render;
using report::Table;
using report::Value;
using report::Writer;

// Writes records through one writer to stdout (Output: checked writes, closed pipe = quiet end).
class Emitter {
 public:
  explicit Emitter(Format f);
  Format format() const { return format_; }
  void begin(const Table& t);
  void emit(const Record& r);
  // Text written as it is, outside any record (generate's streamed text).
  void raw(std::string_view s);
  // Writes what is buffered; flush() also flushes stdout.
  void write_pending();
  void flush();
  // Ends the output (closing a json array) and flushes.
  void end();

 private:
  Format format_;
  std::unique_ptr<Writer> writer_;
  Output out_;
  std::string buf_;
};

}  // namespace lstmlm::cli
