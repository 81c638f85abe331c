// What every kind of tokenizer shares, the way the exporting frameworks' own preprocessing does it:
//   1. the line is decoded as strict UTF-8 (invalid bytes are an InputError naming the byte offset;
//      the caller adds the file and line),
//   2. lowercased exactly like Python's str.lower() (all of Unicode, final sigma included) when
//      `lowercase` is set — Keras' Tokenizer lowercases with str.lower() before filtering,
//   3. cut into pieces by the kind (tokenizer_word.cpp, tokenizer_char.cpp),
//   4. each piece is looked up in the vocabulary; a miss is flagged OOV and mapped to unk_token, or to -1
//      when the model has none.
#include "lstmlm/tokenizer.hpp"

#include "lstmlm/error.hpp"
#include "model/tokenizers.hpp"
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
  auto f = model::decode_utf8(config.filters, &bad);
  if (!f)
    throw ModelError::about(config_file, "tokenizer.filters",
                            "tokenizer.filters is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  filters_ = std::move(*f);
  for (char32_t cp : filters_)
    if (cp < 128) ascii_filters_[cp] = true;
}

const TokenizerTraits& tokenizer_traits(TokenizerType type) {
  static const TokenizerTraits word{to_string(TokenizerType::Word), Completion::WordIndex, true, false};
  static const TokenizerTraits chars{to_string(TokenizerType::Char), Completion::CharBeam, false, true};
  static const TokenizerTraits sentencepiece{to_string(TokenizerType::SentencePiece), Completion::None, false,
                                             false};
  static const TokenizerTraits bpe{to_string(TokenizerType::Bpe), Completion::None, false, false};
  switch (type) {
    case TokenizerType::Char:
      return chars;
    case TokenizerType::SentencePiece:
      return sentencepiece;
    case TokenizerType::Bpe:
      return bpe;
    case TokenizerType::Word:
      break;
  }
  return word;
}

std::unique_ptr<const Tokenizer> Tokenizer::create(const TokenizerConfig& config, const Vocab& vocab,
                                                   const std::string& config_file,
                                                   const std::string& model_dir) {
  switch (config.type) {
    case TokenizerType::Char:
      return model::char_tokenizer(config, vocab, config_file);
    case TokenizerType::SentencePiece:
      return model::sentencepiece_tokenizer(config, vocab, config_file, model_dir);
    case TokenizerType::Bpe:
      return model::bpe_tokenizer(config, vocab, config_file);
    case TokenizerType::Word:
      break;
  }
  return model::word_tokenizer(config, vocab, config_file);
}

std::string Tokenizer::too_many_tokens(size_t max_tokens) {
  return "more than " + std::to_string(max_tokens) +
         " tokens on one line (the limit per line, which bounds its memory): split the line";
}

std::u32string Tokenizer::decode(std::string_view line) const {
  size_t bad = 0;
  auto decoded = model::decode_utf8(line, &bad);
  if (!decoded) throw InputError("invalid UTF-8 at byte " + std::to_string(bad + 1));
  return config_.lowercase ? model::lowercase(*decoded) : std::move(*decoded);
}

void Tokenizer::emit(std::u32string_view piece, std::vector<Token>& out, size_t max_tokens) const {
  if (out.size() == max_tokens) throw InputError(too_many_tokens(max_tokens));
  Token t;
  t.text = model::encode_utf8(piece);
  if (auto id = vocab_->find(t.text)) {
    t.id = *id;
  } else {
    t.oov = true;
    t.id = unk_id_ ? *unk_id_ : -1;
  }
  out.push_back(std::move(t));
}

bool Tokenizer::is_special(int32_t id) const {
  // eos/bos/pad stand for no text (a boundary, padding). unk is printed as its vocabulary string, as
  // PyTorch's word_language_model and KenLM-style tools do: hiding it leaves silent gaps in the text.
  return (id == eos_id_ || id == bos_id_ || id == config_.pad_id) && id != unk_id_;
}

void Tokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_->size())
    throw InputError("detokenize: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                     std::to_string(vocab_->size()) + ")");
}

}  // namespace lstmlm
