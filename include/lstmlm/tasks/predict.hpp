// Next-token prediction for a batch of contexts: typed inputs -> typed results (no printing).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/cache.hpp"
#include "lstmlm/tasks/input.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tasks/window.hpp"

namespace lstmlm::tasks {

class Boost;
class Completer;
class MixRow;

struct PredictOptions {
  int top = 10;  // candidates per context; <= 0 or >= V: the whole vocabulary
  // Pad N: Keras pad_sequences(maxlen=N, padding='pre', truncating='pre') with pad_id (else 0), run from
  // the zero state; Window N: the last N ids; Stateful: every id (tasks/window.hpp).
  WindowOptions window{};
  bool ids_input = false;  // contexts are whitespace-separated ids, fed exactly as given
  bool add_start = true;   // text contexts start with bos_token (else eos_token) when the model has one
  OovPolicy oov = OovPolicy::Skip;
  int batch_size = 64;
  // The letters of the word being typed (tasks/keyboard.hpp): a word model ranks only the tokens that start
  // with them; a character model feeds them after the context and ranks completions to the next word
  // boundary (Candidate::token the whole word). Empty: every token.
  std::string prefix;
  std::shared_ptr<const Completer>
      completer;  // built from the model when a prefix needs one and none is given
  // A Pad window's states after j pads, kept by the caller across calls (tasks/window.hpp); null: this
  // call's own.
  std::shared_ptr<PadStates> pad_states;
  // Added to every row before ranking, the row renormalized (the history: the context's ids).
  std::shared_ptr<const Boost> boost;
  // The model's rows mixed with ARPA models (tasks/mix.hpp) before the boost and the ranking; null: none.
  std::shared_ptr<const MixRow> mix;
  // The continuous cache pointer (tasks/cache.hpp) over each context's own words, applied to its row before
  // the mixture. Not with a window or a character model's prefix.
  CacheOptions cache{};
  // Skip: the candidates are ranked by their logits, which are reported instead of probabilities (no
  // normaliser computed); not with a mixture, a boost, a prefix, a fixed window or the cache.
  Softmax softmax = Softmax::Full;

  // Throws UsageError naming the option when a value is out of range: batch_size in [1, kMaxBatch], the
  // window's length.
  void validate() const;
};

struct Candidate {
  int32_t id = 0;
  std::string token;
  double prob = 0;    // exp(logprob)
  float logprob = 0;  // ln p, as the engine computed it; with Softmax::Skip the logit (prob then NaN)
};

struct Prediction {
  std::vector<int32_t> ids;          // the ids fed to the model after `pads` pad ids (start token included)
  size_t pads = 0;                   // pad ids fed before `ids` (Pad window only)
  std::vector<Candidate> top;        // by descending prob, ties by ascending id
  std::vector<std::string> skipped;  // OOV words skipped (not fed): no unk_token, OovPolicy::Skip
  bool logits = false;               // Softmax::Skip: the candidates carry logits, not log-probs
};

// The context's ids before any window (see PredictOptions), the OOV words skipped added to `skipped`
// when given; throws InputError (prefixed with `where`) when nothing would be fed: an empty context on a
// model without bos/eos, without a Pad window.
std::vector<int32_t> context_ids(const Model& model, const std::string& text, const PredictOptions& opt,
                                 const LineRef& where, std::vector<std::string>* skipped = nullptr);

// The `top` best of one row of log-probabilities.
std::vector<Candidate> top_candidates(const Model& model, const float* logprobs, int top);

// Predicts every context; rows are batched by length, results come back in input order.
// Throws UsageError for a window length outside [1, kMaxWindowLength].
std::vector<Prediction> predict(Engine& engine, const std::vector<std::string>& contexts,
                                const PredictOptions& opt, const std::string& source, uint64_t first_line);

}  // namespace lstmlm::tasks
