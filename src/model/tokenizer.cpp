// Text -> tokens, the way the exporting frameworks' own preprocessing does it:
//   1. the line is decoded as strict UTF-8 (invalid bytes are an InputError naming the byte offset;
//      the caller adds the file and line),
//   2. lowercased exactly like Python's str.lower() (all of Unicode, final sigma included) when
//      `lowercase` is set — Keras' Tokenizer lowercases with str.lower() before filtering,
//   3. word models with `split` (Keras): every character of `filters` becomes `split`, then the text is
//      cut at each occurrence of `split`, empty pieces dropped, exactly Keras' text_to_word_sequence
//      (text.translate(filters -> split).split(split)): other whitespace (U+200A, tab) stays in a word;
//      word models without it: every character of `filters` becomes a space, then the text is split on
//      whitespace as Python's str.split() does (the PyTorch word_language_model corpus reader);
//      char models: every character of `filters` is deleted and every remaining code point is a token
//      (spaces included),
//   4. each piece is looked up in the vocabulary; a miss is flagged OOV and mapped to unk_token, or to -1
//      when the model has none.
#include "lstmlm/tokenizer.hpp"

#include <algorithm>

#include "lstmlm/error.hpp"
#include "model/unicode.hpp"

namespace lstmlm {

Tokenizer::Tokenizer(const TokenizerConfig& config, const Vocab& vocab, const std::string& config_file)
    : config_(config), vocab_(&vocab) {
  auto resolve = [&](const std::optional<std::string>& tok, const char* field) -> std::optional<int32_t> {
    if (!tok) return std::nullopt;
    auto id = vocab.find(*tok);
    if (!id)
      throw ModelError::about(config_file, std::string("tokenizer.") + field,
                              std::string("tokenizer.") + field + " '" + *tok + "' is not in vocab.json");
    return id;
  };
  unk_id_ = resolve(config.unk_token, "unk_token");
  eos_id_ = resolve(config.eos_token, "eos_token");
  bos_id_ = resolve(config.bos_token, "bos_token");
  if (config.pad_id && (*config.pad_id < 0 || *config.pad_id >= vocab.size()))
    throw ModelError::about(config_file, "tokenizer.pad_id",
                            "tokenizer.pad_id " + std::to_string(*config.pad_id) +
                                " is outside the vocabulary [0, " + std::to_string(vocab.size()) + ")");
  size_t bad = 0;
  auto f = detail::decode_utf8(config.filters, &bad);
  if (!f)
    throw ModelError::about(config_file, "tokenizer.filters",
                            "tokenizer.filters is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  filters_ = std::move(*f);
  if (config.split) {
    auto s = detail::decode_utf8(*config.split, &bad);
    if (!s)
      throw ModelError::about(config_file, "tokenizer.split",
                              "tokenizer.split is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    split_ = std::move(*s);
  }
}

std::string Tokenizer::too_many_tokens(size_t max_tokens) {
  return "more than " + std::to_string(max_tokens) +
         " tokens on one line (the limit per line, which bounds its memory): split the line";
}

std::vector<Token> Tokenizer::tokenize(std::string_view line, size_t max_tokens) const {
  size_t bad = 0;
  auto decoded = detail::decode_utf8(line, &bad);
  if (!decoded) throw InputError("invalid UTF-8 at byte " + std::to_string(bad + 1));
  std::u32string text = config_.lowercase ? detail::lowercase(*decoded) : std::move(*decoded);
  auto filtered = [&](char32_t cp) { return filters_.find(cp) != std::u32string::npos; };

  std::vector<Token> out;
  auto emit = [&](std::u32string_view piece) {
    if (out.size() == max_tokens) throw InputError(too_many_tokens(max_tokens));
    Token t;
    t.text = detail::encode_utf8(piece);
    if (auto id = vocab_->find(t.text)) {
      t.id = *id;
    } else {
      t.oov = true;
      t.id = unk_id_ ? *unk_id_ : -1;
    }
    out.push_back(std::move(t));
  };

  if (config_.type == TokenizerType::Char) {
    for (size_t i = 0; i < text.size(); ++i)
      if (!filtered(text[i])) emit(std::u32string_view(text).substr(i, 1));
    return out;
  }
  if (!split_.empty()) {
    std::u32string translated;  // text.translate(filters -> split); `split` may be several characters
    translated.reserve(text.size());
    for (char32_t cp : text)
      if (filtered(cp))
        translated += split_;
      else
        translated += cp;
    std::u32string_view v(translated);
    for (size_t start = 0;;) {
      size_t end = v.find(split_, start);
      auto piece = v.substr(start, end == v.npos ? v.npos : end - start);
      if (!piece.empty()) emit(piece);
      if (end == v.npos) break;
      start = end + split_.size();
    }
    return out;
  }
  size_t start = 0;
  bool in_word = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    bool sep = i == text.size() || detail::is_python_space(text[i]) || filtered(text[i]);
    if (sep && in_word) emit(std::u32string_view(text).substr(start, i - start));
    if (!sep && !in_word) start = i;
    in_word = !sep;
  }
  return out;
}

}  // namespace lstmlm
