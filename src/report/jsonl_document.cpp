#include <cmath>

#include "lstmlm/report/jsonl.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::report {

namespace {

std::string json_number(double v) { return std::isfinite(v) ? format_g9(v) : "null"; }

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::string jsonl_document(std::string_view in, const tasks::JsonlDocument& d) {
  size_t end = in.size();
  while (end > 0 && is_json_space(in[end - 1])) --end;
  // A parsed object ends with '}' once trailing whitespace is gone.
  const size_t close = end > 0 ? end - 1 : 0;
  size_t before = close;
  while (before > 0 && is_json_space(in[before - 1])) --before;
  const bool empty = before > 0 && in[before - 1] == '{';
  std::string line;
  line.reserve(close + 96);
  line.assign(in.substr(0, close));
  line += empty ? "\"logprob\": " : ", \"logprob\": ";
  line += json_number(d.total.logprob);
  line += ", \"tokens\": " + std::to_string(d.total.tokens);
  line += ", \"oovs\": " + std::to_string(d.total.oovs);
  line += ", \"perplexity\": " + json_number(d.perplexity);
  line += '}';
  return line;
}

}  // namespace lstmlm::report
