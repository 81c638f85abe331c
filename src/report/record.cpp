#include "lstmlm/report/record.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::report {

std::unique_ptr<Writer> make_text_writer();
std::unique_ptr<Writer> make_jsonl_writer();
std::unique_ptr<Writer> make_tsv_writer();
std::unique_ptr<Writer> make_md_writer();
std::unique_ptr<Writer> make_csv_writer();
std::unique_ptr<Writer> make_json_writer();
std::unique_ptr<Writer> make_lmzoo_writer();
std::unique_ptr<Writer> make_kenlm_writer();
std::unique_ptr<Writer> make_srilm_writer();
std::unique_ptr<Writer> make_rnnlm_writer();

namespace {

struct Registered {
  Format format;
  const char* name;
  std::unique_ptr<Writer> (*make)();
};

// The registry: one line per output format.
constexpr Registered kFormats[] = {
    {Format::Text, "text", make_text_writer},    {Format::Jsonl, "jsonl", make_jsonl_writer},
    {Format::Tsv, "tsv", make_tsv_writer},       {Format::Md, "md", make_md_writer},
    {Format::Csv, "csv", make_csv_writer},       {Format::Json, "json", make_json_writer},
    {Format::Lmzoo, "lmzoo", make_lmzoo_writer}, {Format::Kenlm, "kenlm", make_kenlm_writer},
    {Format::Srilm, "srilm", make_srilm_writer}, {Format::Rnnlm, "rnnlm", make_rnnlm_writer},
};

const Registered& entry(Format f) {
  for (const auto& r : kFormats)
    if (r.format == f) return r;
  throw std::logic_error("output format without a writer");
}

}  // namespace

namespace {

// A Value of kind k holding v in the member that kind uses.
template <class T>
Value of_kind(Value::Kind k, T Value::*member, T v) {
  Value r;
  r.kind = k;
  r.*member = std::move(v);
  return r;
}

}  // namespace

Value Value::boolean(bool v) { return of_kind(Kind::Bool, &Value::b, v); }
Value Value::integer(int64_t v) { return of_kind(Kind::Int, &Value::i, v); }
Value Value::uinteger(uint64_t v) { return of_kind(Kind::UInt, &Value::u, v); }
Value Value::num9(double v) { return of_kind(Kind::Num9, &Value::d, v); }
Value Value::real(double v) { return of_kind(Kind::Real, &Value::d, v); }
Value Value::str(std::string v) { return of_kind(Kind::Str, &Value::s, std::move(v)); }
Value Value::of_list(std::vector<Value> v) { return of_kind(Kind::List, &Value::list, std::move(v)); }
Value Value::of_record(Fields v) { return of_kind(Kind::Record, &Value::fields, std::move(v)); }

const Value* Record::find(std::string_view name) const {
  for (const auto& f : fields)
    if (f.name == name) return &f.value;
  return nullptr;
}

const Value& Record::at(std::string_view name) const {
  if (const Value* v = find(name)) return *v;
  throw std::logic_error(kind + " record without field " + std::string(name));
}

const char* format_name(Format f) { return entry(f).name; }

Format parse_format(std::string_view name) {
  for (const auto& r : kFormats)
    if (name == r.name) return r.format;
  throw UsageError("unknown output format '" + std::string(name) + "'");
}

std::unique_ptr<Writer> make_writer(Format f) { return entry(f).make(); }

std::string render(Format f, const Table* table, const std::vector<Record>& records) {
  auto w = make_writer(f);
  std::string out;
  if (table) w->begin(*table, out);
  for (const auto& r : records) w->record(r, out);
  w->end(out);
  return out;
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string json_string(std::string_view s) {
  // Printable ASCII other than the quote and the backslash is written as it is (nlohmann's text too): field
  // names and most tokens, without building a json value for each.
  if (std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }))
    return '"' + std::string(s) + '"';
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

std::string num9(double v) { return std::isfinite(v) ? format_g9(v) : "null"; }

// Scalars: the same text in every format that writes numbers as JSON does.
bool append_scalar(std::string& out, const Value& v) {
  switch (v.kind) {
    case Value::Kind::Null:
      out += "null";
      return true;
    case Value::Kind::Bool:
      out += v.b ? "true" : "false";
      return true;
    case Value::Kind::Int:
      out += std::to_string(v.i);
      return true;
    case Value::Kind::UInt:
      out += std::to_string(v.u);
      return true;
    case Value::Kind::Num9:
      out += num9(v.d);
      return true;
    case Value::Kind::Real:
      out += nlohmann::json(v.d).dump();
      return true;
    case Value::Kind::Str:
      out += json_string(v.s);
      return true;
    case Value::Kind::List:
    case Value::Kind::Record:
      return false;
  }
  return false;
}

void indent(std::string& out, int depth) { out.append(static_cast<size_t>(depth) * 2, ' '); }

}  // namespace

void append_json(std::string& out, const Fields& fields, bool compact) {
  out += '{';
  bool first = true;
  for (const auto& f : fields) {
    if (f.display) continue;
    if (!first) out += compact ? "," : ", ";
    first = false;
    out += json_string(f.name);
    out += compact ? ":" : ": ";
    append_json(out, f.value, compact);
  }
  out += '}';
}

void append_json(std::string& out, const Value& v, bool compact) {
  if (append_scalar(out, v)) return;
  if (v.kind == Value::Kind::Record) return append_json(out, v.fields, compact);
  out += '[';
  for (size_t i = 0; i < v.list.size(); ++i) {
    if (i) out += compact ? "," : ", ";
    append_json(out, v.list[i], compact);
  }
  out += ']';
}

void append_json_pretty(std::string& out, const Value& v, int depth) {
  if (append_scalar(out, v)) return;
  bool rec = v.kind == Value::Kind::Record;
  size_t n = 0;
  if (rec) {
    for (const auto& f : v.fields) n += f.display ? 0 : 1;
  } else {
    n = v.list.size();
  }
  if (n == 0) {
    out += rec ? "{}" : "[]";
    return;
  }
  out += rec ? "{\n" : "[\n";
  size_t k = 0;
  auto item = [&](const Value& x, const std::string* name) {
    indent(out, depth + 1);
    if (name) out += json_string(*name) + ": ";
    append_json_pretty(out, x, depth + 1);
    out += ++k < n ? ",\n" : "\n";
  };
  if (rec) {
    for (const auto& f : v.fields)
      if (!f.display) item(f.value, &f.name);
  } else {
    for (const auto& x : v.list) item(x, nullptr);
  }
  indent(out, depth);
  out += rec ? '}' : ']';
}

std::string cell(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Null:
      return "";
    case Value::Kind::Bool:
      return v.b ? "1" : "0";
    case Value::Kind::Str:
      return v.s;
    default:
      break;
  }
  std::string s;
  append_json(s, v, true);
  return s;
}

std::string escape_text(std::string_view s) {
  auto special = [](unsigned char c) { return c < 0x20 || c == 0x7F || c == '\\'; };
  size_t i = 0;
  while (i < s.size() && !special(static_cast<unsigned char>(s[i]))) ++i;
  if (i == s.size()) return std::string(s);
  static const char kHex[] = "0123456789abcdef";
  std::string out(s.substr(0, i));
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!special(c)) {
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace lstmlm::report
