// Any bytes as a SentencePiece normalizer table (precompiled_charsmap), and as a whole ModelProto. The
// input is one byte n, n bytes of text, then the table. A table the check accepts is searched for the text
// the way libsentencepiece searches it (darts-clone's commonPrefixSearch, then NormalizePrefix reading the
// replacement up to its NUL), here with every read bounds-checked: the check must have refused any table
// on which this search leaves the table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.hpp"
#include "lstmlm/error.hpp"
#include "model/sentencepiece_charsmap.hpp"

namespace lstmlm::fuzz {

inline void search_like_sentencepiece(std::string_view blob, std::string_view text) {
  uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = trie_bytes << 8 | static_cast<unsigned char>(blob[size_t(i)]);
  const size_t n = trie_bytes / 4;
  const std::string_view strings = blob.substr(4 + size_t{trie_bytes});
  const auto unit = [&](size_t i) {
    require(i < n,
            "charsmap: an accepted table is read at unit " + std::to_string(i) + " of " + std::to_string(n));
    uint32_t u = 0;
    for (int k = 3; k >= 0; --k) u = u << 8 | static_cast<unsigned char>(blob[4 + 4 * i + size_t(k)]);
    return u;
  };
  const auto offset = [](uint32_t u) { return (u >> 10) << ((u & (1U << 9)) >> 6); };
  // Every suffix of the text, as Normalize moves along it.
  for (size_t from = 0; from < text.size(); ++from) {
    size_t pos = offset(unit(0)), matches = 0;
    for (size_t i = from; i < text.size(); ++i) {
      const auto byte = static_cast<unsigned char>(text[i]);
      pos ^= byte;
      const uint32_t u = unit(pos);
      if ((u & 0x800000FFU) != byte) break;
      pos ^= offset(u);
      if ((u >> 8 & 1) == 0) continue;
      require(++matches <= 32, "charsmap: an accepted table yields more than 32 matches");
      const size_t value = unit(pos) & 0x7FFFFFFFU;
      require(value < strings.size() && strings.find('\0', value) != std::string_view::npos,
              "charsmap: an accepted table's replacement runs past the strings");
    }
  }
}

inline void check_charsmap(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    model::check_normalizer_tables(input, "tokenizer.model");
  } catch (const ModelError& e) {
    require_short(e);
  }
  if (input.empty() || size_t{static_cast<unsigned char>(input[0])} >= input.size()) return;
  const std::string_view text = input.substr(1, static_cast<unsigned char>(input[0]));
  const std::string_view blob = input.substr(1 + text.size());
  const std::string problem = model::charsmap_problem(blob);
  if (!problem.empty()) {
    require(problem.size() < 512 && problem.find('\n') == std::string::npos, "charsmap: a long refusal");
    return;
  }
  search_like_sentencepiece(blob, text);
}

}  // namespace lstmlm::fuzz
