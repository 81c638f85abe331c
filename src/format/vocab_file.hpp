// vocab.json, the file: a JSON array of strings, index = token id (the model layer builds the Vocab).
#pragma once
#include <string>
#include <vector>

namespace lstmlm::format {

// The token strings of vocab.json, every one valid UTF-8; throws ModelError naming `path`.
std::vector<std::string> read_vocab_json(const std::string& path);

}  // namespace lstmlm::format
