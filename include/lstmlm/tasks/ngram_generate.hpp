// `lstmlm generate -m FILE.arpa`: text sampled from an ARPA n-gram model with generate's sampler, seeds and
// records (docs/mixing.md). The prompt is read as score -m FILE.arpa reads a line (words split on ASCII
// whitespace, <unk> for a word that is not a unigram, after <s>); each step draws from ln p(w | state)
// over every word but <s> (</s> and <unk> included); </s> ends a sample when stop_at_eos is unset or true.
// Sample i draws from Rng::stream(seed, i) only, as generate does.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/ngram.hpp"
#include "lstmlm/tasks/generate.hpp"

namespace lstmlm::tasks {

// UsageError naming what an n-gram model cannot take (a window, a boost, a mixture); InputError for
// invalid UTF-8 in the prompt, an OOV under OovPolicy::Error or a prompt past the budget.
GenerateResult generate_ngram(const NgramModel& model, const GenerateOptions& options,
                              const TokenCallback& on_token = {});

// The printed text of an n-gram model's sample, built token by token as TextJoin is: the prompt, then each
// word after a space (none before the first word of an empty prompt), </s> as "" (a neural model's eos).
class NgramTextJoin {
 public:
  NgramTextJoin(const NgramModel& model, std::string_view prompt) : model_(&model), first_(prompt.empty()) {}
  std::string piece(int32_t id);

 private:
  const NgramModel* model_;
  bool first_;  // nothing before the next word on its line
};

}  // namespace lstmlm::tasks
