// The kinds of tokenizer behind Tokenizer::create, each in a file of its own.
#pragma once
#include <memory>
#include <string>

#include "lstmlm/tokenizer.hpp"

namespace lstmlm::model {

std::unique_ptr<const Tokenizer> word_tokenizer(const TokenizerConfig& config, const Vocab& vocab,
                                                const std::string& config_file);
std::unique_ptr<const Tokenizer> char_tokenizer(const TokenizerConfig& config, const Vocab& vocab,
                                                const std::string& config_file);
std::unique_ptr<const Tokenizer> sentencepiece_tokenizer(const TokenizerConfig& config, const Vocab& vocab,
                                                         const std::string& config_file,
                                                         const std::string& model_dir);
std::unique_ptr<const Tokenizer> bpe_tokenizer(const TokenizerConfig& config, const Vocab& vocab,
                                               const std::string& config_file);

}  // namespace lstmlm::model
