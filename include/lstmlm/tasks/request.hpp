// The request vocabulary every front end shares (the CLI, the server, the Python module, the C API): the
// words of each enumerated option and their values, the default window, and how a text is split into lines.
// A front end only renders these: CLI11 checks against names(), the server reads a field with parse(), the
// Python bindings take a keyword with parse(); a bad word is one UsageError carrying the option's key, which
// each face spells its own way (UsageError::spelled).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/normalize.hpp"
#include "lstmlm/precision.hpp"
#include "lstmlm/tasks/input.hpp"
#include "lstmlm/tasks/mix.hpp"
#include "lstmlm/tasks/rescore.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tasks/window.hpp"
#include "lstmlm/units.hpp"

namespace lstmlm::tasks {

// `word` in double quotes, escaped as a JSON string and cut for a one-line message.
std::string quoted_word(std::string_view word);

// One enumerated option: its key (snake_case, as the server's field and Python's keyword; the CLI's flag
// is "--" and the key with dashes) and its words, the default first.
template <class E>
class Choices {
 public:
  Choices(std::string key, std::vector<std::pair<std::string, E>> words)
      : key_(std::move(key)), words_(std::move(words)) {
    for (const auto& w : words_) names_.push_back(w.first);
  }
  const std::string& key() const { return key_; }
  const std::vector<std::string>& names() const { return names_; }
  E fallback() const { return words_.front().second; }
  // The value of `word`; UsageError naming the key and the words when it is none of them.
  E parse(std::string_view word) const {
    for (const auto& w : words_)
      if (w.first == word) return w.second;
    std::string list;
    for (const auto& n : names_) list += (list.empty() ? "" : ", ") + n;
    throw UsageError::option(key_, ": expected one of " + list + ", got " + quoted_word(word));
  }
  const std::string& name(E value) const {
    for (const auto& w : words_)
      if (w.second == value) return w.first;
    return words_.front().first;
  }

 private:
  std::string key_;
  std::vector<std::pair<std::string, E>> words_;
  std::vector<std::string> names_;
};

// --context / "context": sentence (the state reset at every line) or document.
const Choices<ContextMode>& context_choices();
// --oov / "oov": skip or error, for an OOV word of a model without an unk_token.
const Choices<OovPolicy>& oov_choices();
// --aggregate / "aggregate": tokens, or words (a char or subword model's parts summed).
const Choices<Aggregate>& aggregate_choices();
// --units / "units": the historic logprob and log10prob fields (none given: "default"), ln, log10, bits,
// prob.
const Choices<Units>& units_choices();
// --normalize / "normalize": none, lower, nfkc, ccnet (lstmlm/normalize.hpp).
const Choices<Normalization>& normalize_choices();
// --mix-mode / "mix_mode": linear or loglinear (tasks/mix.hpp).
const Choices<MixMode>& mix_mode_choices();
// --softmax / "softmax": full (ln p) or skip (the logit alone, for a self-normalised model).
const Choices<Softmax>& softmax_choices();
// --precision / "precision": fp32, bf16, int8.
const Choices<Precision>& precision_choices();

// --fold-embedding / "fold_embedding": auto, always, never (EmbeddingFold: layer 0's input term as a
// table per token, or the embedding through W_ih at every step).
const Choices<EmbeddingFold>& fold_choices();

// bench's --cell: lstm, gru, rnn (config.json's names).
const Choices<CellType>& cell_choices();
// rescore's --context / "context": utterance, or conversation (the best hypothesis' state carried on).
const Choices<bool>& rescore_context_choices();
// rescore's --ngram-units / "ngram_units": log10, ln, cost (-ln p).
const Choices<LogUnits>& ngram_units_choices();

// The window of a request: the one given (--pad-to, --window, --stateful), else the model's input_length
// as a Pad window when its config has one (a Keras app's fixed input), else the carried state.
WindowOptions default_window(const Model& model, std::optional<WindowOptions> given);

// The lines of a text as the CLI reads a file: "\n" or "\r\n" ends a line, a last line without a line end
// is still a line (LineEnd::None), and with `strip_bom` a UTF-8 BOM at the start is dropped.
void split_lines(std::string_view text, std::vector<std::string>& lines, std::vector<LineEnd>& ends,
                 bool strip_bom = true);

}  // namespace lstmlm::tasks
