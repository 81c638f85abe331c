// vocab.json: a JSON array of strings, index = token id.
#include "format/vocab_file.hpp"

#include "format/json_util.hpp"
#include "lstmlm/config.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::format {

std::vector<std::string> read_vocab_json(const std::string& path) {
  // parse_json refuses ill-formed UTF-8 and lone surrogate escapes, so every string below is valid UTF-8.
  nlohmann::json j = parse_json(read_file(path, kMaxVocabBytes), path);
  if (!j.is_array()) throw ModelError(path, "expected a JSON array of token strings, found " + brief(j));
  std::vector<std::string> tokens;
  tokens.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string())
      throw ModelError::about(path, "[" + std::to_string(i) + "]",
                              "entry " + std::to_string(i) + ": expected a string, found " + brief(j[i]));
    tokens.push_back(j[i].get<std::string>());
  }
  return tokens;
}

}  // namespace lstmlm::format
