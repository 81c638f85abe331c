// Text generation: a prompt is run through the model once, then K samples continue it as one batch
// (docs/generation.md). Typed inputs -> typed results; printing is the CLI's job.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/cache.hpp"
#include "lstmlm/tasks/constraint.hpp"
#include "lstmlm/tasks/input.hpp"
#include "lstmlm/tasks/keyboard.hpp"
#include "lstmlm/tasks/logit_bias.hpp"
#include "lstmlm/tasks/mix.hpp"
#include "lstmlm/tasks/sampler.hpp"
#include "lstmlm/tasks/window.hpp"
#include "lstmlm/tokenizer.hpp"

namespace lstmlm::tasks {

// Beam search in place of sampling (tasks/beam.hpp, docs/generation.md): on when beam_size > 0.
struct BeamParams {
  int beam_size = 0;  // K hypotheses kept per step; 0 = sample instead
  int n_best = 1;     // hypotheses returned, N <= K
  // GNMT's length normalisation (Wu et al. 2016): a finished hypothesis of `len` tokens ranks by
  // score / ((5 + len) / 6)^A; 0 = the raw sum of log-probs.
  float length_penalty = 0;
  int no_repeat_ngram = 0;  // no n-gram of this many tokens twice in the prompt + hypothesis; 0 = off
  int batch_size = 0;       // hypotheses per engine call; 0 = all K in one
  bool on() const { return beam_size > 0; }
};

struct GenerateOptions {
  std::string prompt;
  int max_tokens = 100;  // tokens generated per sample, eos included
  SamplerParams sampler;
  uint64_t seed = 0;
  int num_samples = 1;
  std::optional<bool> stop_at_eos;  // unset: on when the model has an eos token
  // Pad / Window: every token is predicted from the window of the prompt's context + the tokens generated
  // so far, from the zero state, as a Keras app's loop does (tasks/window.hpp); Stateful: the state carries.
  tasks::WindowOptions window{};
  tasks::OovPolicy oov = tasks::OovPolicy::Skip;  // a prompt word not in the vocabulary, without unk_token
  // Added to each step's distribution before the sampler sees it, the row renormalized (tasks/keyboard.hpp;
  // the history: the prompt's tokens and the sample's). GeneratedToken::logprob stays the model's own.
  std::shared_ptr<const tasks::Boost> boost;
  // Each step's distribution mixed with ARPA models (tasks/mix.hpp) before the boost: the sampler draws
  // from the mixture, and GeneratedToken::logprob is the mixture's ln p. Null: none.
  std::shared_ptr<const tasks::MixRow> mix;
  // The continuous cache pointer (tasks/cache.hpp) over the prompt and each sample's own tokens, applied to
  // each step's row before the mixture: the sampler draws from it. Not with a window or a beam search.
  tasks::CacheOptions cache{};
  // Added to every step's log-probabilities with the boost, before the choice (tasks/logit_bias.hpp).
  std::shared_ptr<const tasks::LogitBias> bias;
  // Tokens the text may continue with (tasks/constraint.hpp): a mask at every step; null: none.
  std::shared_ptr<const tasks::Constraint> constraint;
  // A sample or hypothesis ends after the token that completes one of these in its generated text.
  std::vector<std::string> stop;
  BeamParams beam;
  // The prompt's tokens are taken from it as the prompt is tokenized (a request's bound); null: none.
  std::shared_ptr<tasks::TokenBudget> budget{};

  // The token that ends a text: eos when the model has one and stop_at_eos allows (the constraint's end).
  std::optional<int32_t> end_token(const Model& model) const;

  // Throws UsageError naming the option when a value is out of range: max_tokens in [0,
  // kMaxGenerateTokens], num_samples in [1, kMaxSamples], the sampler's parameters, the window's length.
  void validate() const;
};

struct GeneratedToken {
  int32_t id = -1;
  float logprob = 0;  // ln p(token | context) under the model, before any sampler transform
};

struct GeneratedSample {
  int index = 0;
  std::vector<GeneratedToken> tokens;
  double total_logprob = 0;  // sum of the tokens' logprob
  bool stopped_at_eos = false;
  std::string stopped_at;  // the stop string that ended it, if one did
  std::vector<int32_t> ids() const;
};

// The prompt as the model sees it.
struct Prompt {
  std::vector<Token> tokens;  // the prompt's fed tokens (line breaks included as tokens, see prompt_context)
  std::vector<int32_t> context;      // ids fed to the model: the start token (bos, else eos, if any) + tokens
  std::vector<std::string> skipped;  // OOV words skipped (not fed): no unk_token, OovPolicy::Skip
};

// Tokenizes a prompt. A line break is the char model's "\n" token (unk when the vocabulary has none) or, in a
// word model, the eos token when it has one (else plain whitespace). The context starts with bos, else eos,
// as in `score`; a model with neither starts from the prompt alone, so an empty prompt is then an InputError
// (unless `pad_window`: a Pad window predicts from the pads alone, as Keras does for an empty seed).
// An OOV word maps to unk when the model has one; without unk it is skipped (Prompt::skipped), or with
// OovPolicy::Error an InputError naming the word, as score does. Each line's tokens are taken from `budget`
// (LimitError past it) when one is given.
Prompt prompt_context(const Model& model, std::string_view prompt,
                      tasks::OovPolicy oov = tasks::OovPolicy::Skip, bool pad_window = false,
                      tasks::TokenBudget* budget = nullptr);

// Called with (sample index, token) as soon as each token is chosen: lets the CLI stream.
using TokenCallback = std::function<void(int, const GeneratedToken&)>;

struct GenerateResult {
  Prompt prompt;
  std::vector<GeneratedSample> samples;
};

// The printed form of a sample, as `lstmlm generate` writes it: the prompt as given, then the generated
// text; in a word model the two are joined by a space. Built token by token, so a streamed output and the
// whole text agree byte for byte.
class TextJoin {
 public:
  TextJoin(const Tokenizer& tok, std::string_view prompt);
  // The text a token adds ("" for special tokens).
  std::string piece(int32_t id);

 private:
  const Tokenizer* tok_;
  std::optional<std::string> prev_;  // the last token's text (Tokenizer::join_text), "" after a prompt
};

// The whole printed text of a sample: the prompt and every TextJoin piece of `ids`.
std::string sample_text(const Tokenizer& tok, std::string_view prompt, std::span<const int32_t> ids);

// Runs the prompt once, copies its state to every sample, then steps all unfinished samples as one batch.
// Sample i draws from Rng::stream(seed, i) only, and the engine is batch-invariant, so sample i is the
// same whatever num_samples and the engine's thread count.
GenerateResult generate(Engine& engine, const GenerateOptions& options, const TokenCallback& on_token = {});

}  // namespace lstmlm::tasks
