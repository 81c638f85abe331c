#include "lstmlm/vocab.hpp"

#include <bit>
#include <functional>

#include "format/vocab_file.hpp"

namespace lstmlm {

Vocab::Vocab(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {
  slots_.assign(std::bit_ceil(std::max<size_t>(2 * tokens_.size(), 2)), -1);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    size_t slot = 0;
    if (!probe(tokens_[i], slot)) slots_[slot] = static_cast<int32_t>(i);  // a duplicate keeps the first id
  }
}

Vocab Vocab::load(const std::string& path) { return Vocab(format::read_vocab_json(path)); }

std::optional<int32_t> Vocab::probe(std::string_view token, size_t& slot) const {
  const size_t mask = slots_.size() - 1;
  for (slot = std::hash<std::string_view>{}(token)&mask;; slot = (slot + 1) & mask) {
    const int32_t id = slots_[slot];
    if (id < 0) return std::nullopt;
    if (tokens_[static_cast<size_t>(id)] == token) return id;
  }
}

std::optional<int32_t> Vocab::find(std::string_view token) const {
  if (slots_.empty()) return std::nullopt;  // a default-constructed Vocab
  size_t slot = 0;
  return probe(token, slot);
}

}  // namespace lstmlm
