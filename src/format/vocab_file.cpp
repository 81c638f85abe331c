// vocab.json: a JSON array of strings, index = token id.
#include "format/json_util.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/vocab.hpp"

namespace lstmlm {

Vocab Vocab::load(const std::string& path) {
  // parse_json refuses ill-formed UTF-8 and lone surrogate escapes, so every string below is valid UTF-8.
  nlohmann::json j = format::parse_json(format::read_file(path), path);
  if (!j.is_array())
    throw ModelError(path + ": expected a JSON array of token strings, found " + format::brief(j));
  std::vector<std::string> tokens;
  tokens.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string())
      throw ModelError(path + ": entry " + std::to_string(i) + ": expected a string, found " +
                       format::brief(j[i]));
    tokens.push_back(j[i].get<std::string>());
  }
  return Vocab(std::move(tokens));
}

}  // namespace lstmlm
