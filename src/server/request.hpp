// A request's JSON body, read field by field: each getter checks the type and range and names the field
// in its error (400); done() refuses every field no getter asked for, so a misspelt option is an error,
// not silently the default.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace lstmlm::server {

class Body {
 public:
  // An empty body is an empty object. Throws HttpError 400 for text that is not one JSON object (invalid
  // UTF-8 included: JSON strings are UTF-8).
  explicit Body(const std::string& text);

  std::optional<std::string> str(const std::string& field);
  std::optional<bool> boolean(const std::string& field);
  std::optional<int64_t> integer(const std::string& field, int64_t lo, int64_t hi);
  std::optional<double> number(const std::string& field, double lo, double hi);
  std::optional<std::vector<std::string>> strings(const std::string& field, size_t max_items);
  std::optional<std::vector<int32_t>> ids(const std::string& field, size_t max_items, int32_t vocab_size);
  // The value as it is (an object or array the caller reads itself), or nullptr.
  const nlohmann::json* raw(const std::string& field);
  // Throws HttpError 400 naming the first field that no getter read.
  void done() const;

 private:
  const nlohmann::json* get(const std::string& field);
  nlohmann::json j_;
  std::set<std::string> read_;
};

// One line of a request's text or a value quoted in a message: printable and cut (lstmlm::printable).
std::string shown(const nlohmann::json& v);

}  // namespace lstmlm::server
