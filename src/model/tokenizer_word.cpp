// Word models. With `split` (Keras): every character of `filters` becomes `split`, then the text is cut at
// each occurrence of `split`, empty pieces dropped, exactly Keras' text_to_word_sequence
// (text.translate(filters -> split).split(split)): other whitespace (U+200A, tab) stays in a word.
// Without it: every character of `filters` becomes a space, then the text is split on whitespace as
// Python's str.split() does (the PyTorch word_language_model corpus reader). Words detokenize joined by
// spaces.
#include "lstmlm/error.hpp"
#include "model/tokenizers.hpp"
#include "model/unicode.hpp"

namespace lstmlm::model {

namespace {

class WordTokenizer final : public Tokenizer {
 public:
  WordTokenizer(const TokenizerConfig& config, const Vocab& vocab, const std::string& config_file)
      : Tokenizer(config, vocab, config_file) {
    if (!config.split) return;
    size_t bad = 0;
    auto s = decode_utf8(*config.split, &bad);
    if (!s)
      throw ModelError::about(config_file, "tokenizer.split",
                              "tokenizer.split is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    split_ = std::move(*s);
  }

  std::vector<Token> tokenize(std::string_view line, size_t max_tokens) const override {
    const std::u32string text = decode(line);
    std::vector<Token> out;
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
        if (!piece.empty()) emit(piece, out, max_tokens);
        if (end == v.npos) break;
        start = end + split_.size();
      }
      return out;
    }
    size_t start = 0;
    bool in_word = false;
    for (size_t i = 0; i <= text.size(); ++i) {
      bool sep = i == text.size() || is_python_space(text[i]) || filtered(text[i]);
      if (sep && in_word) emit(std::u32string_view(text).substr(start, i - start), out, max_tokens);
      if (!sep && !in_word) start = i;
      in_word = !sep;
    }
    return out;
  }

  std::string detokenize(std::span<const int32_t> ids) const override {
    std::string out;
    bool first = true;
    for (int32_t id : ids) {
      check_id(id);
      if (is_special(id)) continue;
      if (!first) out += ' ';
      out += vocab().token(id);
      first = false;
    }
    return out;
  }

  std::string join_text(std::optional<std::string_view> prev, std::string_view piece) const override {
    return (prev ? " " : "") + std::string(piece);
  }

 private:
  std::u32string split_;  // config.split decoded; empty: split on whitespace (str.split())
};

}  // namespace

std::unique_ptr<const Tokenizer> word_tokenizer(const TokenizerConfig& config, const Vocab& vocab,
                                                const std::string& config_file) {
  return std::make_unique<WordTokenizer>(config, vocab, config_file);
}

}  // namespace lstmlm::model
