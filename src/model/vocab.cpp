#include "lstmlm/vocab.hpp"

#include "format/vocab_file.hpp"

namespace lstmlm {

Vocab::Vocab(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {
  ids_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) ids_.emplace(tokens_[i], static_cast<int32_t>(i));
}

Vocab Vocab::load(const std::string& path) { return Vocab(format::read_vocab_json(path)); }

std::optional<int32_t> Vocab::find(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace lstmlm
