#include "lstmlm/tasks/jsonl.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/text.hpp"
#include "tasks/score_lines.hpp"

namespace lstmlm::tasks {

namespace {

using json = nlohmann::json;

// The fields a document gets; one already at its top level is an error (the output would hold it twice).
constexpr const char* kAdded[] = {"logprob", "tokens", "oovs", "perplexity"};

// A diagnostic part that came from the user's bytes, made one printable line of at most 200 bytes.
std::string one_line(const std::string& s) { return printable(s, 200); }

// What nlohmann says, without its "[json.exception.parse_error.101] parse error at line 1, column 5: ".
std::string parse_detail(const std::string& what) {
  std::string s = what;
  if (s.rfind("[json.exception.", 0) == 0) {
    size_t e = s.find("] ");
    if (e != std::string::npos) s = s.substr(e + 2);
  }
  if (s.rfind("parse error", 0) == 0) {
    size_t e = s.find(": ");
    if (e != std::string::npos) s = s.substr(e + 2);
  }
  return one_line(s);
}

const char* kind_name(json::value_t t) {
  switch (t) {
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    default:
      return "a number";
  }
}

// SAX events of one document: the type of the top-level value, the top-level keys that matter and the
// text field's value. No DOM is built, so a deeply nested or large document costs no more than its bytes.
class Probe final : public json::json_sax_t {
 public:
  explicit Probe(const std::string& field) : field_(field) {}
  json::value_t top = json::value_t::discarded;  // the top-level value's type
  bool has_text = false;
  json::value_t text_type = json::value_t::discarded;
  std::string text;
  std::string duplicate;  // the first added field already present
  bool error = false;
  size_t error_byte = 0;
  std::string error_detail;

  bool null() override { return value(json::value_t::null); }
  bool boolean(bool) override { return value(json::value_t::boolean); }
  bool number_integer(number_integer_t) override { return value(json::value_t::number_integer); }
  bool number_unsigned(number_unsigned_t) override { return value(json::value_t::number_unsigned); }
  bool number_float(number_float_t, const string_t&) override { return value(json::value_t::number_float); }
  bool string(string_t& v) override {
    if (depth_ == 1 && at_text_) text = std::move(v);
    return value(json::value_t::string);
  }
  bool binary(binary_t&) override { return value(json::value_t::binary); }
  bool start_object(std::size_t) override {
    value(json::value_t::object);
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ != 1) return true;
    at_text_ = k == field_;
    if (at_text_) has_text = true;
    if (duplicate.empty())
      for (const char* a : kAdded)
        if (k == a) duplicate = a;
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    value(json::value_t::array);
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    error = true;
    error_byte = position;
    error_detail = parse_detail(ex.what());
    return false;
  }

 private:
  bool value(json::value_t t) {
    if (depth_ == 0) top = t;
    if (depth_ == 1 && at_text_) {
      text_type = t;
      at_text_ = false;
    }
    return true;
  }
  const std::string& field_;
  size_t depth_ = 0;
  bool at_text_ = false;
};

std::string num9(double v) { return std::isfinite(v) ? format_g9(v) : "null"; }

// Lines scored per Scorer call: bounds the per-token records alive at once.
constexpr size_t kChunkLines = 4096;

// One document on its way: its text as lines, and the totals once scored.
struct Doc {
  size_t index = 0;  // in the block
  uint64_t line = 0;
  std::vector<std::string> lines;
  std::vector<LineEnd> ends;
};

}  // namespace

JsonlScorer::JsonlScorer(Engine& engine, JsonlOptions opt) : engine_(&engine), opt_(std::move(opt)) {
  if (opt_.text_field.empty()) throw UsageError("jsonl: the text field name is empty");
  auto bad = [](const std::optional<double>& b) { return b && std::isnan(*b); };
  if (bad(opt_.min_perplexity) || bad(opt_.max_perplexity))
    throw UsageError("jsonl: a perplexity bound is NaN");
  if (opt_.min_perplexity && opt_.max_perplexity && *opt_.min_perplexity > *opt_.max_perplexity)
    throw UsageError("jsonl: the minimum perplexity " + num9(*opt_.min_perplexity) +
                     " is above the maximum " + num9(*opt_.max_perplexity) +
                     ": every document would be filtered");
  if (opt_.score.entropy || opt_.score.rank || opt_.score.aggregate == Aggregate::Words)
    throw UsageError(
        "jsonl: entropy, rank and word aggregation are per-token measures; a document has totals");
  Scorer check(engine, opt_.score);  // the options the model cannot take fail here, not per document
}

std::vector<JsonlDocument> JsonlScorer::score(const std::vector<std::string>& lines,
                                              const std::string& source, uint64_t first_line) {
  const Model& model = engine_->model();
  std::vector<JsonlDocument> out(lines.size());
  std::vector<Doc> docs;
  auto fail = [&](size_t i, const std::string& what) {
    out[i].status = JsonlDocument::Status::Error;
    out[i].error = source + ":" + std::to_string(first_line + i) + ": " + what;
  };
  const std::string& field = opt_.text_field;
  for (size_t i = 0; i < lines.size(); ++i) {
    // JSON allows no NUL byte anywhere (inside a string it must be escaped); a parser may take one for the
    // end of its input, so a line holding one is refused before it is parsed, whatever follows.
    if (const size_t nul = lines[i].find('\0'); nul != std::string::npos) {
      fail(i, "invalid JSON at byte " + std::to_string(nul + 1) +
                  ": a NUL byte; a line holds one JSON object and nothing else");
      continue;
    }
    Probe p(field);
    json::sax_parse(lines[i], &p);
    const std::string quoted = "'" + one_line(field) + "'";
    if (p.error) {
      fail(i, "invalid JSON at byte " + std::to_string(p.error_byte) + ": " + p.error_detail);
      continue;
    }
    if (p.top != json::value_t::object) {
      fail(i, std::string("not a JSON object (") + kind_name(p.top) + "): each line must be one object");
      continue;
    }
    if (!p.has_text) {
      fail(i, "no field " + quoted + " in the object");
      continue;
    }
    if (p.text_type != json::value_t::string) {
      fail(i, "field " + quoted + " is " +
                  (p.text_type == json::value_t::object ? "an object" : kind_name(p.text_type)) +
                  ", not a string");
      continue;
    }
    if (!p.duplicate.empty()) {
      fail(i, "field '" + p.duplicate +
                  "' already present: the output adds logprob, tokens, oovs and perplexity");
      continue;
    }
    Doc d;
    d.index = i;
    d.line = first_line + i;
    split_lines(p.text, d.lines, d.ends, false);  // a document keeps a BOM it holds
    // Whatever the Scorer refuses (invalid UTF-8, an OOV under OovPolicy::Error, too many tokens) is
    // found here, one document at a time, before any scoring: the batch below then cannot throw for it.
    // An error in the text's line k reads "SOURCE:LINE: field 'text'[, line K of its text]: ...".
    bool ok = true;
    for (size_t k = 0; ok && k < d.lines.size(); ++k) {
      std::string where = "field " + quoted;
      if (d.lines.size() > 1) where += ", line " + std::to_string(k + 1) + " of its text";
      try {
        detail::tokenize_line(model, d.lines[k], opt_.score, LineRef{source, d.line}, d.ends[k]);
      } catch (const InputError& e) {
        // The document's own place is in `where`: the detail without it.
        const bool here = e.source() == source && e.line() == d.line;
        fail(i, where + ": " + (here ? e.detail() : e.message()));
        ok = false;
      }
    }
    if (!ok) continue;
    docs.push_back(std::move(d));
  }

  // Each document's totals. Its lines are scored kChunkLines at a time and their records dropped once
  // added, so a document of millions of short lines costs the memory of its text, not of its records.
  std::vector<ScoreSummary> sums(docs.size());
  auto score_alone = [&](size_t j) {
    Scorer s(*engine_, opt_.score);  // a fresh stream: document mode starts every document from the start
    const Doc& d = docs[j];
    ScoreSummary sum;
    for (size_t k = 0; k < d.lines.size(); k += kChunkLines) {
      const size_t n = std::min(kChunkLines, d.lines.size() - k);
      const auto from = static_cast<ptrdiff_t>(k), to = static_cast<ptrdiff_t>(k + n);
      std::vector<std::string> part(d.lines.begin() + from, d.lines.begin() + to);
      std::vector<LineEnd> ends(d.ends.begin() + from, d.ends.begin() + to);
      for (const auto& l : s.score(part, source, d.line, ends)) sum.add(l);
    }
    sums[j] = sum;
  };
  auto guarded = [&](size_t j) {
    try {
      score_alone(j);
      return true;
    } catch (const InputError& e) {
      fail(docs[j].index, e.message());
      return false;
    }
  };
  std::vector<bool> scored(docs.size(), false);
  if (opt_.score.context == ContextMode::Sentence) {
    // Every line is its own sentence: the lines of all documents in chunks, each one Scorer call.
    bool batched = true;
    try {
      Scorer s(*engine_, opt_.score);
      std::vector<std::string> part;
      std::vector<LineEnd> ends;
      std::vector<size_t> owner;  // the document of each line of the chunk
      auto flush = [&] {
        if (part.empty()) return;
        std::vector<LineScore> ls = s.score(part, source, first_line, ends);
        for (size_t k = 0; k < ls.size(); ++k) sums[owner[k]].add(ls[k]);
        part.clear();
        ends.clear();
        owner.clear();
      };
      for (size_t j = 0; j < docs.size(); ++j)
        for (size_t k = 0; k < docs[j].lines.size(); ++k) {
          part.push_back(docs[j].lines[k]);
          ends.push_back(docs[j].ends[k]);
          owner.push_back(j);
          if (part.size() == kChunkLines) flush();
        }
      flush();
    } catch (const InputError&) {
      // Not expected after the checks above; then each document alone, its error its own.
      batched = false;
      std::fill(sums.begin(), sums.end(), ScoreSummary{});
    }
    for (size_t j = 0; j < docs.size(); ++j) scored[j] = batched || guarded(j);
  } else {
    for (size_t j = 0; j < docs.size(); ++j) scored[j] = guarded(j);
  }

  for (size_t j = 0; j < docs.size(); ++j) {
    if (!scored[j]) continue;
    JsonlDocument& r = out[docs[j].index];
    const ScoreSummary& sum = sums[j];
    r.total.line = docs[j].line;
    r.total.skipped = sum.sentences == 0 && sum.skipped > 0;
    r.total.logprob = sum.logprob;
    r.total.oov_logprob = sum.oov_logprob;
    r.total.tokens = sum.tokens;
    r.total.oovs = sum.oovs;
    r.total.oov_tokens = sum.oov_tokens;
    r.total.nonfinite = sum.nonfinite;
    r.perplexity = sum.perplexity();
    const auto& lo = opt_.min_perplexity;
    const auto& hi = opt_.max_perplexity;
    const double p = r.perplexity;
    bool keep = std::isnan(p) ? !lo && !hi : !(lo && p < *lo) && !(hi && p > *hi);
    r.status = keep ? JsonlDocument::Status::Kept : JsonlDocument::Status::Filtered;
  }
  return out;
}

}  // namespace lstmlm::tasks
