// Any byte string as a line of text, through a word and a char tokenizer: an InputError (invalid
// UTF-8) or tokens whose ids are in range and whose texts are non-empty.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "check.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tokenizer.hpp"

namespace lstmlm::fuzz {

namespace tokenizer_detail {
inline const Vocab& vocab() {
  static const Vocab v({"<pad>", "<unk>", "<eos>", "the", "é", "a", " ", "\n", "ß", "日本"});
  return v;
}
inline TokenizerConfig config(TokenizerType type) {
  TokenizerConfig c;
  c.type = type;
  c.lowercase = true;
  c.filters = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n«»";
  c.unk_token = type == TokenizerType::Word ? std::optional<std::string>("<unk>") : std::nullopt;
  c.eos_token = "<eos>";
  c.pad_id = 0;
  return c;
}
inline void check(const Tokenizer& t, std::string_view line) {
  try {
    for (const auto& tok : t.tokenize(line)) {
      require(tok.id >= -1 && tok.id < vocab().size() && !tok.text.empty(), "tokenizer: bad token");
      require(tok.id != -1 || tok.oov, "tokenizer: id -1 without the oov flag");
    }
  } catch (const InputError&) {
  }
}
}  // namespace tokenizer_detail

inline void check_tokenizer(const uint8_t* data, size_t size) {
  using namespace tokenizer_detail;
  static const auto word = Tokenizer::create(config(TokenizerType::Word), vocab());
  static const auto chars = Tokenizer::create(config(TokenizerType::Char), vocab());
  std::string_view line(reinterpret_cast<const char*>(data), size);
  check(*word, line);
  check(*chars, line);
}

}  // namespace lstmlm::fuzz
