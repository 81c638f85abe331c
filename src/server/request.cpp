#include "server/request.hpp"

#include <cmath>

#include "format/json_util.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"
#include "server/http_error.hpp"

namespace lstmlm::server {

namespace {

HttpError bad(const std::string& field, const std::string& what, const nlohmann::json& got) {
  return HttpError(400, "field '" + printable(field, 64) + "': expected " + what + ", got " + shown(got));
}

}  // namespace

std::string shown(const nlohmann::json& v) { return printable(format::dump_prefix(v, 400), 80); }

Body::Body(const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    j_ = nlohmann::json::object();
    return;
  }
  // The model files' reader: nesting past kMaxJsonDepth, a NUL byte and a repeated key are refused before
  // a value is built, so no later step (a copy, a quoted value) recurses deeper than that.
  try {
    j_ = format::parse_json(text, "request body");
  } catch (const ModelError& e) {
    throw HttpError(400, printable(e.what(), 300));
  }
  if (!j_.is_object()) throw HttpError(400, "request body: expected a JSON object, got " + shown(j_));
}

const nlohmann::json* Body::get(const std::string& field) {
  read_.insert(field);
  auto it = j_.find(field);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

const nlohmann::json* Body::raw(const std::string& field) { return get(field); }

std::optional<std::string> Body::str(const std::string& field) {
  const auto* v = get(field);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw bad(field, "a string", *v);
  return v->get<std::string>();
}

std::optional<bool> Body::boolean(const std::string& field) {
  const auto* v = get(field);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw bad(field, "true or false", *v);
  return v->get<bool>();
}

std::optional<int64_t> Body::integer(const std::string& field, int64_t lo, int64_t hi) {
  const auto* v = get(field);
  if (!v) return std::nullopt;
  const std::string range = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (v->is_number_unsigned()) {
    const auto u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || (lo > 0 && u < static_cast<uint64_t>(lo)))
      throw bad(field, range, *v);
    return static_cast<int64_t>(u);
  }
  if (!v->is_number_integer()) throw bad(field, range, *v);
  const auto i = v->get<int64_t>();
  if (i < lo || i > hi) throw bad(field, range, *v);
  return i;
}

std::optional<double> Body::number(const std::string& field, double lo, double hi) {
  const auto* v = get(field);
  if (!v) return std::nullopt;
  const std::string range =
      "a number in [" + nlohmann::json(lo).dump() + ", " + nlohmann::json(hi).dump() + "]";
  if (!v->is_number()) throw bad(field, range, *v);
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) throw bad(field, range, *v);
  return d;
}

std::optional<std::vector<std::string>> Body::strings(const std::string& field, size_t max_items) {
  const auto* v = get(field);
  if (!v) return std::nullopt;
  const std::string what = "an array of at most " + std::to_string(max_items) + " strings";
  if (!v->is_array() || v->size() > max_items) throw bad(field, what, *v);
  std::vector<std::string> out;
  out.reserve(v->size());
  for (const auto& e : *v) {
    if (!e.is_string()) throw bad(field, what, e);
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::optional<std::vector<int32_t>> Body::ids(const std::string& field, size_t max_items,
                                              int32_t vocab_size) {
  const auto* v = get(field);
  if (!v) return std::nullopt;
  const std::string what = "an array of at most " + std::to_string(max_items) + " token ids in [0, " +
                           std::to_string(vocab_size - 1) + "]";
  if (!v->is_array() || v->size() > max_items) throw bad(field, what, *v);
  std::vector<int32_t> out;
  out.reserve(v->size());
  for (const auto& e : *v) {
    if (!e.is_number_integer()) throw bad(field, what, e);
    const auto i = e.get<int64_t>();
    if (i < 0 || i >= vocab_size) throw bad(field, what, e);
    out.push_back(static_cast<int32_t>(i));
  }
  return out;
}

void Body::done() const {
  for (const auto& [name, value] : j_.items())
    if (!read_.count(name)) throw HttpError(400, "unknown field '" + printable(name, 64) + "'");
}

}  // namespace lstmlm::server
