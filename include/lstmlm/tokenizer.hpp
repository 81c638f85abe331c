// Text -> token ids according to the model's `tokenizer` config (word or char, Keras-style filters).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/config.hpp"
#include "lstmlm/vocab.hpp"

namespace lstmlm {

struct Token {
  int32_t id = -1;   // -1: out of vocabulary and the model has no unk token
  std::string text;  // the surface form after lowercasing/filtering
  bool oov = false;  // true when the word is not in the vocabulary (id is unk or -1)
};

// How a half-typed word is completed (keyboards, predict's prefix, sessions): from an index of the
// vocabulary's words (a word model), by a beam over characters to the next word boundary (a character model),
// or not at all (a subword model: a piece is no word, and typed letters need not be a piece).
enum class Completion { WordIndex, CharBeam, None };

// What each kind of tokenizer does where tasks and front ends differ by kind: one row per TokenizerType
// (tokenizer.cpp), the only place that tests the kind.
struct TokenizerTraits {
  const char* name;         // config.json's tokenizer.type: word, char, sentencepiece, bpe
  Completion completion;    // how a half-typed word is completed
  bool tokens_are_words;    // one token per word: --aggregate words has nothing to sum
  bool line_break_is_text;  // a line break in a text is the "\n" token (char-rnn's training text)
};
const TokenizerTraits& tokenizer_traits(TokenizerType type);

// Text <-> ids for one kind of tokenizer (config.json tokenizer.type): word (tokenizer_word.cpp), char
// (tokenizer_char.cpp), sentencepiece (tokenizer_sentencepiece.cpp) or bpe (tokenizer_bpe.cpp); a new kind
// implements tokenize, detokenize and join_text in a file of its own and adds its case to create(). What
// every kind shares: the special tokens, the filters, the UTF-8 decoding and lowercasing, the vocabulary
// lookup and the per-line limit.
class Tokenizer {
 public:
  // The tokenizer of config's type. Checks the config against the vocabulary; a ModelError names
  // `config_file` and the field. A kind with a file of its own (sentencepiece) reads it from `model_dir`.
  static std::unique_ptr<const Tokenizer> create(const TokenizerConfig& config, const Vocab& vocab,
                                                 const std::string& config_file = "config.json",
                                                 const std::string& model_dir = "");
  virtual ~Tokenizer() = default;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Splits one line (without its line end). Throws InputError on invalid UTF-8 ("invalid UTF-8 at byte N",
  // N counted from 1; the caller names the file and line). Rules: the kind's file, docs/scoring.md.
  // More than `max_tokens` tokens is an InputError ("more than N tokens on one line ..."), thrown as the
  // token past the limit is found.
  virtual std::vector<Token> tokenize(std::string_view line, size_t max_tokens = SIZE_MAX) const = 0;
  // That message, for the readers of other token forms (score's --ids) that apply the same limit.
  static std::string too_many_tokens(size_t max_tokens);
  // Text of the ids: chars joined for char models, words joined by spaces; eos/bos/pad omitted,
  // unk printed as its vocabulary string. An id outside the vocabulary is an InputError.
  virtual std::string detokenize(std::span<const int32_t> ids) const = 0;
  bool is_special(int32_t id) const;
  // The text a token adds to a stream of text (generate's output, a word made of subword pieces), from the
  // token's text (its vocabulary string, or an unknown piece's surface) and the previous token's: none at
  // the start of the text, "" after text that is no token (a prompt). Word models put a space between
  // words, char models none, subword models a space where a new word starts (SentencePiece's "\u2581",
  // after a bpe piece without the continuation marker). The caller leaves eos/bos/pad out.
  virtual std::string join_text(std::optional<std::string_view> prev, std::string_view piece) const = 0;

  const TokenizerConfig& config() const { return config_; }
  const TokenizerTraits& traits() const { return tokenizer_traits(config_.type); }
  std::optional<int32_t> unk_id() const { return unk_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> pad_id() const { return config_.pad_id; }
  const Vocab& vocab() const { return *vocab_; }

 protected:
  Tokenizer(const TokenizerConfig& config, const Vocab& vocab, const std::string& config_file);
  // The line as code points, lowercased when the config says so; InputError on invalid UTF-8.
  std::u32string decode(std::string_view line) const;
  bool filtered(char32_t cp) const {
    return cp < 128 ? ascii_filters_[cp] : filters_.find(cp) != std::u32string::npos;
  }
  // Appends the token of `piece` (its id, or unk / -1 and oov when the vocabulary lacks it) to out,
  // InputError when out already holds max_tokens.
  void emit(std::u32string_view piece, std::vector<Token>& out, size_t max_tokens) const;
  // Checks an id of detokenize.
  void check_id(int32_t id) const;

 private:
  TokenizerConfig config_;
  const Vocab* vocab_;
  std::optional<int32_t> unk_id_, eos_id_, bos_id_;
  std::u32string filters_;  // config_.filters decoded once (code points)
  // Its ASCII ones by code point: a lookup per character of every line, not a search of the string.
  std::array<bool, 128> ascii_filters_{};
};

}  // namespace lstmlm
