// Output records and formats, shared by every front end (the CLI, the Python module, a server): a task's
// results become typed records (named fields in output order), and the Writer of the chosen format turns
// them into bytes; only writers do. So every front end writes the same fields with the same numbers.
//
// A new output format is one new file src/report/write_NAME.cpp defining `make_NAME_writer()` plus one line
// in the registry table (src/report/record.cpp, kFormats) and its enum value below; a CLI subcommand lists
// the formats it accepts when it adds its option (add_format_option, cli/options.hpp).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lstmlm::report {

struct Field;
using Fields = std::vector<Field>;

// One typed value of a record field.
struct Value {
  enum class Kind {
    Null,
    Bool,
    Int,   // int64
    UInt,  // uint64 (seeds)
    Num9,  // double written with 9 significant digits (%.9g, round-trips float32); non-finite: null
    Real,  // double written as the shortest text that reads back the same double (nlohmann::json's form)
    Str,
    List,    // of values
    Record,  // nested named fields
  };
  Kind kind = Kind::Null;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string s{};
  std::vector<Value> list;
  Fields fields;

  static Value null();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value uinteger(uint64_t v);
  static Value num9(double v);
  static Value real(double v);
  static Value str(std::string v);
  static Value of_list(std::vector<Value> v);
  static Value of_record(Fields v);
};

struct Field {
  std::string name;
  Value value;
  // Display fields are for the human formats (text) only; data formats (jsonl, tsv, csv, json) skip them.
  bool display = false;
};

// Defined once Field is complete: a Value's destructor needs the vector<Field> one (clang with libstdc++
// instantiates it at the point of use).
inline Value Value::null() { return {}; }

// One output record. `kind` names what it holds ("score.line", "score.summary", "predict",
// "generate.sample", "bench.row"): human writers lay each kind out their own way, data writers ignore it.
struct Record {
  std::string kind;
  Fields fields;
  // The field of that name, or nullptr.
  const Value* find(std::string_view name) const;
  const Value& at(std::string_view name) const;  // throws std::logic_error when absent
};

// A table's layout, declared before the first record: tabular writers (tsv, csv, md) print their header
// from it and write only records of this kind, with these columns in this order. A column absent from a
// record is looked up in the elements of the record's first list of records, one row per element; the
// column "position" is then the element's 1-based position.
struct Table {
  std::string kind;
  std::vector<std::string> columns;
};

enum class Format { Text, Jsonl, Tsv, Md, Csv, Json, Lmzoo, Kenlm, Srilm, Rnnlm };

class Writer {
 public:
  virtual ~Writer() = default;
  virtual void begin(const Table& /*table*/, std::string& /*out*/) {}
  virtual void record(const Record& r, std::string& out) = 0;
  virtual void end(std::string& /*out*/) {}
};

// The registry: name <-> format <-> writer.
const char* format_name(Format f);
Format parse_format(std::string_view name);  // throws UsageError for a name not registered
std::unique_ptr<Writer> make_writer(Format f);

// The bytes `records` give in format f (after the table's header when `table` is given, and with the
// format's ending): what the CLI writes to stdout, for tests and callers that keep text.
std::string render(Format f, const Table* table, const std::vector<Record>& records);

// Shared renderings, so every writer writes a value the same way.
std::string fixed(double v, int decimals);  // %.*f; nan, inf, -inf for non-finite values
std::string json_string(std::string_view s);
void append_json(std::string& out, const Value& v, bool compact);
void append_json(std::string& out, const Fields& f, bool compact);     // an object, display fields skipped
void append_json_pretty(std::string& out, const Value& v, int depth);  // indent 2, as json.dump(2)
// A scalar as a table cell: strings raw, booleans 1/0, null empty, numbers as in JSON.
std::string cell(const Value& v);
// A string as the text and tsv formats write it, so that it stays inside its field and line: \t, \n, \r
// and \\ for a tab, line feed, carriage return and backslash, \xNN for the other bytes < 0x20 and 0x7f;
// every other byte as it is. jsonl and json carry the raw string (JSON escapes).
std::string escape_text(std::string_view s);

}  // namespace lstmlm::report
