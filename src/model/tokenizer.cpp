// Placeholder: the constructor resolves special ids; tokenize/detokenize land with the score issue.
#include "lstmlm/tokenizer.hpp"

#include "lstmlm/error.hpp"

namespace lstmlm {

Tokenizer::Tokenizer(const TokenizerConfig& config, const Vocab& vocab) : config_(config), vocab_(&vocab) {
  auto resolve = [&](const std::optional<std::string>& tok, const char* field) -> std::optional<int32_t> {
    if (!tok) return std::nullopt;
    auto id = vocab.find(*tok);
    if (!id) throw ModelError(std::string("config.json: tokenizer.") + field + " '" + *tok + "' is not in vocab.json");
    return id;
  };
  unk_id_ = resolve(config.unk_token, "unk_token");
  eos_id_ = resolve(config.eos_token, "eos_token");
  bos_id_ = resolve(config.bos_token, "bos_token");
  if (config.pad_id && (*config.pad_id < 0 || *config.pad_id >= vocab.size()))
    throw ModelError("config.json: tokenizer.pad_id " + std::to_string(*config.pad_id) + " is outside the vocabulary [0, " +
                     std::to_string(vocab.size()) + ")");
}

}  // namespace lstmlm
