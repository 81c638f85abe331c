// Token ids -> text: the inverse of tokenization as far as it goes (lowercasing and filters are lost).
#include <string>

#include "lstmlm/error.hpp"
#include "lstmlm/tokenizer.hpp"

namespace lstmlm {

bool Tokenizer::is_special(int32_t id) const {
  // eos/bos/pad stand for no text (a boundary, padding). unk is printed as its vocabulary string, as
  // PyTorch's word_language_model and KenLM-style tools do: hiding it leaves silent gaps in the text.
  return (id == eos_id_ || id == bos_id_ || id == config_.pad_id) && id != unk_id_;
}

std::string Tokenizer::detokenize(std::span<const int32_t> ids) const {
  const bool words = config_.type == TokenizerType::Word;
  std::string out;
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_->size())
      throw InputError("detokenize: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                       std::to_string(vocab_->size()) + ")");
    if (is_special(id)) continue;
    if (words && !first) out += ' ';
    out += vocab_->token(id);
    first = false;
  }
  return out;
}

}  // namespace lstmlm
