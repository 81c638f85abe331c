// Pre-split BPE (subword-nmt, fairseq): the text is already cut into pieces separated by whitespace, a
// piece ending in the continuation marker ("@@") joined to the next one in the word. Pieces are split as
// a word model without filters splits words (Python's str.split()); they detokenize as subword-nmt's
// documentation undoes them (the pieces joined by spaces, then every "@@ " removed, and a final "@@").
#include <optional>

#include "model/tokenizers.hpp"
#include "model/unicode.hpp"

namespace lstmlm::model {

namespace {

class BpeTokenizer final : public Tokenizer {
 public:
  BpeTokenizer(const TokenizerConfig& config, const Vocab& vocab, const std::string& config_file)
      : Tokenizer(config, vocab, config_file), marker_(config.continuation) {}

  std::vector<Token> tokenize(std::string_view line, size_t max_tokens) const override {
    const std::u32string text = decode(line);
    std::vector<Token> out;
    size_t start = 0;
    bool in_piece = false;
    for (size_t i = 0; i <= text.size(); ++i) {
      const bool sep = i == text.size() || is_python_space(text[i]);
      if (sep && in_piece) emit(std::u32string_view(text).substr(start, i - start), out, max_tokens);
      if (!sep && !in_piece) start = i;
      in_piece = !sep;
    }
    return out;
  }

  std::string detokenize(std::span<const int32_t> ids) const override {
    std::string out;
    std::optional<std::string_view> prev;
    for (int32_t id : ids) {
      check_id(id);
      if (is_special(id)) continue;
      out += join_text(prev, vocab().token(id));
      prev = vocab().token(id);
    }
    return out;
  }

  std::string join_text(std::optional<std::string_view> prev, std::string_view piece) const override {
    if (piece.ends_with(marker_)) piece.remove_suffix(marker_.size());  // the last piece's marker too
    const bool glued = !prev || prev->ends_with(marker_);
    return (glued ? "" : " ") + std::string(piece);
  }

 private:
  std::string marker_;
};

}  // namespace

std::unique_ptr<const Tokenizer> bpe_tokenizer(const TokenizerConfig& config, const Vocab& vocab,
                                               const std::string& config_file) {
  return std::make_unique<BpeTokenizer>(config, vocab, config_file);
}

}  // namespace lstmlm::model
