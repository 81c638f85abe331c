// The JSONL filter (tasks::JsonlScorer) on lines from a grammar of JSONL documents and their near misses:
// objects with a text field whose string holds line ends, escapes (\u0000, lone surrogates), raw UTF-8 and
// invalid bytes; other fields, nested values, the output's own field names; the text of the wrong type;
// whitespace, a NUL byte or garbage after the object. A first byte with its low bit clear feeds the rest
// of the input as raw lines instead. Property, in sentence and document mode:
//  - one result per line; an error is one short line "fuzz:N: ..." of its own line number;
//  - a line that is not strict JSON (nlohmann's accept, which takes no NUL byte) is an error;
//  - a kept or filtered document is the input object with every field it had, plus logprob, tokens, oovs
//    and perplexity, and is itself one valid JSON object.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "check.hpp"
#include "check_score_line.hpp"
#include "lstmlm/report/jsonl.hpp"
#include "lstmlm/tasks/jsonl.hpp"

namespace lstmlm::fuzz {

namespace jsonl_detail {

class Grammar {
 public:
  Grammar(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool more() const { return i_ < n_; }
  uint8_t byte() { return i_ < n_ ? p_[i_++] : 0; }

  std::string line() {
    std::string s = ws();
    const uint8_t kind = byte() % 8;
    if (kind == 0)
      s += value(2);  // not an object
    else
      s += object(kind == 1);
    switch (byte() % 6) {
      case 0:
        s += ws();
        break;
      case 1:
        s += std::string(1, '\0') + "tail";
        break;
      case 2:
        s += " x";
        break;
      case 3:
        s += object(false);  // a second object
        break;
      default:
        break;
    }
    return s;
  }

 private:
  std::string ws() {
    static const char* const kWs[] = {"", " ", "\t", "  ", "\r", "\v"};
    return kWs[byte() % 6];
  }
  std::string text() {
    static const char* const kPieces[] = {
        "the ",    "a ", "x",      "\\n",     "\\r\\n", "\\u0000", "\\ud800", "\\udc00\\ud800",
        "\\u00e9", "é",  "日本",   "\xff",    "\xc3",   "\t",      "\\t",     "\\\"",
        "\\\\",    " ",  "\\n\\n", "\\u000b", "de la ", "\x7f",    "\\/",     "ß"};
    std::string s = "\"";
    const int n = byte() % 16;
    for (int k = 0; k < n; ++k) s += kPieces[byte() % (sizeof kPieces / sizeof *kPieces)];
    if (byte() % 16 != 0) s += '"';  // else unterminated
    return s;
  }
  std::string value(int depth) {
    switch (byte() % 8) {
      case 0:
        return "null";
      case 1:
        return "-1.5e3";
      case 2:
        return "true";
      case 3:
        return depth > 0 ? "[" + value(depth - 1) + ", " + value(depth - 1) + "]" : "[]";
      case 4:
        return depth > 0 ? "{\"k\": " + value(depth - 1) + "}" : "{}";
      case 5:
        return "01";  // invalid number
      default:
        return text();
    }
  }
  std::string object(bool without_text) {
    static const char* const kNames[] = {"n",          "meta", "logprob",    "tokens",
                                         "perplexity", "oovs", "t\\u0065xt", ""};
    std::string s = "{";
    const int fields = byte() % 5;
    const int text_at = without_text ? -1 : byte() % (fields + 1);
    bool first = true;
    auto add = [&](const std::string& name, const std::string& v) {
      s += first ? "" : (byte() % 8 == 0 ? "" : ",");  // sometimes a missing comma
      s += ws() + "\"" + name + "\"" + ws() + ":" + ws() + v;
      first = false;
    };
    for (int k = 0; k <= fields; ++k) {
      if (k == text_at) add("text", byte() % 8 == 0 ? value(1) : text());
      if (k < fields) add(kNames[byte() % (sizeof kNames / sizeof *kNames)], value(2));
    }
    if (byte() % 16 == 1) s += ",";  // a trailing comma
    return s + ws() + "}";
  }
  const uint8_t* p_;
  size_t n_, i_ = 0;
};

inline void check_results(const std::vector<std::string>& lines,
                          const std::vector<tasks::JsonlDocument>& got) {
  using nlohmann::json;
  require(got.size() == lines.size(), "jsonl: not one result per line");
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& r = got[i];
    const bool valid = json::accept(lines[i]);
    if (r.status == tasks::JsonlDocument::Status::Error) {
      const std::string prefix = "fuzz:" + std::to_string(i + 1) + ": ";
      require(r.error.rfind(prefix, 0) == 0, "jsonl: an error without its line: " + r.error.substr(0, 200));
      require(r.error.size() < 2048 && r.error.find('\n') == std::string::npos,
              "jsonl: an error not one line");
      continue;
    }
    require(valid, "jsonl: a line that is not strict JSON was kept: " + lines[i].substr(0, 200));
    const json in = json::parse(lines[i]);
    require(in.is_object() && in.contains("text") && in["text"].is_string(), "jsonl: kept without a text");
    const std::string line = report::jsonl_document(lines[i], r);
    require(json::accept(line), "jsonl: the output line is not valid JSON: " + line.substr(0, 200));
    const json out = json::parse(line);
    require(out.is_object(), "jsonl: the output is not an object");
    for (const auto& [k, v] : in.items())
      require(out.contains(k) && out[k] == v, "jsonl: the output lost or changed field " + k);
    require(out.size() == in.size() + 4, "jsonl: the output does not add exactly four fields");
    require(out["tokens"].is_number_integer() && out["tokens"].get<int64_t>() >= 0, "jsonl: tokens");
    require(out["oovs"].is_number_integer() && out["oovs"].get<int64_t>() >= 0, "jsonl: oovs");
    require(out["logprob"].is_null() || out["logprob"].is_number(), "jsonl: logprob");
  }
}

}  // namespace jsonl_detail

inline void check_jsonl(const uint8_t* data, size_t size) {
  using namespace jsonl_detail;
  static const auto m = score_detail::model();
  static Engine engine(m, 1);
  static tasks::JsonlScorer sentences(engine, {});
  static tasks::JsonlScorer documents(engine, [] {
    tasks::JsonlOptions o;
    o.score.context = tasks::ContextMode::Document;
    return o;
  }());
  std::vector<std::string> lines;
  if (size > 0 && (data[0] & 1)) {
    Grammar g(data + 1, size - 1);
    while (g.more() && lines.size() < 16) lines.push_back(g.line());
  } else {
    lines.emplace_back();
    for (size_t i = size > 0 ? 1 : 0; i < size; ++i) {
      if (data[i] == '\n')
        lines.emplace_back();
      else
        lines.back().push_back(static_cast<char>(data[i]));
    }
  }
  check_results(lines, sentences.score(lines, "fuzz", 1));
  check_results(lines, documents.score(lines, "fuzz", 1));
}

}  // namespace lstmlm::fuzz
