// Character models: every character of `filters` is deleted and every remaining code point is a token
// (spaces included); tokens detokenize joined without a separator.
#include "model/tokenizers.hpp"

namespace lstmlm::model {

namespace {

class CharTokenizer final : public Tokenizer {
 public:
  CharTokenizer(const TokenizerConfig& config, const Vocab& vocab, const std::string& config_file)
      : Tokenizer(config, vocab, config_file) {}

  std::vector<Token> tokenize(std::string_view line, size_t max_tokens) const override {
    const std::u32string text = decode(line);
    std::vector<Token> out;
    for (size_t i = 0; i < text.size(); ++i)
      if (!filtered(text[i])) emit(std::u32string_view(text).substr(i, 1), out, max_tokens);
    return out;
  }

  std::string detokenize(std::span<const int32_t> ids) const override {
    std::string out;
    for (int32_t id : ids) {
      check_id(id);
      if (!is_special(id)) out += vocab().token(id);
    }
    return out;
  }

  std::string join_text(std::optional<std::string_view>, std::string_view piece) const override {
    return std::string(piece);
  }
};

}  // namespace

std::unique_ptr<const Tokenizer> char_tokenizer(const TokenizerConfig& config, const Vocab& vocab,
                                                const std::string& config_file) {
  return std::make_unique<CharTokenizer>(config, vocab, config_file);
}

}  // namespace lstmlm::model
