// Text -> token ids according to the model's `tokenizer` config (word or char, Keras-style filters).
#pragma once
#include <cstdint>
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

class Tokenizer {
 public:
  // Checks the config against the vocabulary; a ModelError names `config_file` and the field.
  Tokenizer(const TokenizerConfig& config, const Vocab& vocab,
            const std::string& config_file = "config.json");

  // Splits one line (without its line end). Throws InputError on invalid UTF-8 ("invalid UTF-8 at byte N",
  // N counted from 1; the caller names the file and line). Rules: src/model/tokenizer.cpp, docs/scoring.md.
  // More than `max_tokens` tokens is an InputError ("more than N tokens on one line ..."), thrown as the
  // token past the limit is found.
  std::vector<Token> tokenize(std::string_view line, size_t max_tokens = SIZE_MAX) const;
  // That message, for the readers of other token forms (score's --ids) that apply the same limit.
  static std::string too_many_tokens(size_t max_tokens);
  // Text of the ids: chars joined for char models, words joined by spaces; eos/bos/pad omitted,
  // unk printed as its vocabulary string.
  std::string detokenize(std::span<const int32_t> ids) const;
  bool is_special(int32_t id) const;

  const TokenizerConfig& config() const { return config_; }
  std::optional<int32_t> unk_id() const { return unk_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> pad_id() const { return config_.pad_id; }

 private:
  TokenizerConfig config_;
  const Vocab* vocab_;
  std::optional<int32_t> unk_id_, eos_id_, bos_id_;
  std::u32string filters_;  // config_.filters decoded once (code points)
  std::u32string split_;    // config_.split decoded; empty: split on whitespace (str.split())
};

}  // namespace lstmlm
