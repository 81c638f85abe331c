#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/nbest.hpp"

namespace lstmlm::tasks {

namespace {

// A value from the input in a message: at most 60 bytes, control bytes as '?', quoted.
std::string shown(std::string_view s) {
  std::string v(s.substr(0, 60));
  for (char& c : v)
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  return "'" + v + (s.size() > 60 ? "...'" : "'");
}

}  // namespace

void parse_jsonl_hypothesis(std::string_view line, std::optional<std::vector<std::string>>& names,
                            const std::string& where, Hypothesis& h) {
  using nlohmann::json;
  // JSON holds no NUL byte, not even in a string; bytes after one must not be ignored (as the JSONL filter).
  if (const auto nul = line.find('\0'); nul != std::string_view::npos)
    throw InputError(where + "not a JSON object: a NUL byte at offset " + std::to_string(nul));
  json j;
  try {
    // The callback bounds the nesting (a record needs 3 levels), so no deep value is ever built.
    j = json::parse(line, [](int depth, json::parse_event_t, json&) {
      if (depth > 8) throw std::length_error("nested deeper than 8 levels");
      return true;
    });
  } catch (const std::exception& e) {
    std::string m = e.what();
    if (auto p = m.find("] "); m.starts_with("[json") && p != std::string::npos) m.erase(0, p + 2);
    throw InputError(where + "not a JSON object: " + shown(m));
  }
  if (!j.is_object()) throw InputError(where + "a jsonl line is one object {\"utt\": ..., \"hyp\": ...}");
  auto text = [&](const char* key, bool required) -> std::string {
    auto it = j.find(key);
    if (it == j.end()) {
      if (required)
        throw InputError(where + "no \"" + key + "\": every hypothesis needs its utterance and text");
      return "";
    }
    if (!it->is_string()) throw InputError(where + "\"" + key + "\" is not a string");
    return it->get<std::string>();
  };
  h.utt = text("utt", true);
  if (h.utt.empty()) throw InputError(where + "\"utt\" is empty: every hypothesis needs its utterance id");
  h.text = text("hyp", true);
  h.id = text("id", false);
  h.recording = text("recording", false);
  std::vector<std::string> keys;
  auto s = j.find("scores");
  if (s != j.end() && !s->is_object()) throw InputError(where + "\"scores\" is not an object");
  if (s != j.end())
    for (auto it = s->begin(); it != s->end(); ++it) keys.push_back(it.key());  // sorted by nlohmann
  if (!names) names = keys;
  if (keys != *names)
    throw InputError(where +
                     "\"scores\" has other names than the first record's (every record needs the same)");
  if (s == j.end()) return;
  for (const auto& name : *names) {
    const json& v = (*s)[name];
    std::vector<double> vals;
    auto add = [&](const json& x) {
      if (!x.is_number() || !std::isfinite(x.get<double>()))
        throw InputError(where + "score \"" + name + "\" is not a finite number (or a list of them)");
      vals.push_back(x.get<double>());
    };
    if (v.is_array())
      for (const auto& x : v) add(x);
    else
      add(v);
    if (vals.empty()) throw InputError(where + "score \"" + name + "\" is an empty list");
    h.scores.push_back(std::move(vals));
  }
}

}  // namespace lstmlm::tasks
