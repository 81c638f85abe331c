// What a keyboard asks of a language model between keystrokes: the next words that start with the letters
// typed so far (Completer), and words or phrases the user wants more (or less) of (Boost). Both work on one
// row of next-token log-probabilities (a state's kept distribution, a predict row, a sampling step), so a
// keyboard advances its state once per committed word and asks per keystroke without touching the engine.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/predict.hpp"

namespace lstmlm::tasks {

// Refuses a completion of the half-typed word `prefix` (non-empty) that the model's tokenizer does not do as
// `how`: a UsageError with the key "prefix", saying what the model's kind does instead. One rule for the CLI,
// the server, Python and the C API.
void check_completion(const Model& model, Completion how, std::string_view prefix);

// Word completion over a word model's vocabulary: the tokens sorted by their bytes once (V log V), so the
// tokens that start with a prefix are one contiguous range found by two binary searches (O(log V) per
// keystroke); only that range is ranked.
class Completer {
 public:
  explicit Completer(const Model& model);
  // The model's one Completer, made by the first call and kept with the model (Model::derived) for every
  // front end and thread.
  static std::shared_ptr<const Completer> of(const Model& model);
  // The prefix as the tokenizer would see it: lowercased when the model's tokenizer lowercases.
  std::string normalize(std::string_view prefix) const;
  // Ids of the tokens that start with `prefix` (normalized first), in byte order of their tokens.
  // Special tokens (bos, eos, pad; unk too when the prefix is not empty) are never completions.
  std::span<const int32_t> matching(std::string_view prefix) const;
  // The `top` most probable completions in a row of V log-probs (descending, ties by ascending id, as
  // top_candidates); fewer when fewer tokens match; top <= 0: every match.
  std::vector<Candidate> complete(const float* logprobs, std::string_view prefix, int top) const;

 private:
  const Model* model_;
  std::vector<int32_t> sorted_;  // non-special ids by token bytes
  std::vector<int32_t> no_unk_;  // the same without unk, for a non-empty prefix
};

// Completion for a character model: the characters typed are part of the context (fed before this is
// called: `after` is the state after them and `logprobs` the distribution it predicts), and each completion
// is the most probable continuation up to the next word boundary (whitespace, a line end, eos, or a
// character of the tokenizer's filters), by beam search of width `top` over characters, at most
// `max_chars` characters. The log-prob of a completion sums its characters, the boundary included.
// Candidate::id is the boundary's id; Candidate::token the characters before it.
// `between_steps`, when set, is called after each engine step (a caller's interrupt check; what it throws
// ends the search).
std::vector<Candidate> complete_chars(Engine& engine, const State& after, std::span<const float> logprobs,
                                      int top, int max_chars = 24,
                                      const std::function<void()>& between_steps = {});

// Words and phrases with an additive log-prob ("contextual biasing"). A file holds one entry per line:
// the phrase (tokenized by the model, as a context is), a tab, and the bonus in natural-log units (finite,
// within [-100, 100]); '#' starts a comment line; blank lines are skipped. An entry applies to the last
// token of its phrase when the tokens before it end the history. Bonuses of every entry that applies add
// up; the boosted row is renormalized: lp'_j = lp_j + b_j - ln sum_k exp(lp_k + b_k). Phrases are a trie
// over token ids, so each step looks at the history's last (longest phrase - 1) tokens only.
class Boost {
 public:
  // Tokens of one phrase at most: each step walks the trie from every suffix of the history up to the
  // longest phrase, so a step costs up to (longest phrase)^2 / 2 lookups.
  static constexpr size_t kMaxPhraseTokens = 64;

  // Throws InputError "SOURCE:LINE: ..." for a malformed line, a phrase with a word outside the
  // vocabulary (unk included: a boost is for words the model can predict), an empty phrase or a phrase
  // given twice.
  static Boost parse(const Model& model, const std::vector<std::string>& lines, const std::string& source);
  // Reads a file (InputError "FILE: cannot open: ..." when it cannot).
  static Boost load(const Model& model, const std::string& path);

  size_t size() const { return entries_; }
  size_t longest() const { return longest_; }  // tokens in the longest phrase
  // The bonuses for the token after `history` (the ids fed so far, the last most recent), as (id, bonus).
  std::vector<std::pair<int32_t, float>> bonuses(std::span<const int32_t> history) const;
  // Adds those bonuses to a row of V log-probs and renormalizes it in place (see the class comment).
  void apply(std::span<const int32_t> history, float* logprobs, int V) const;

 private:
  struct Node {
    std::vector<std::pair<int32_t, uint32_t>> children;  // (token, node), sorted by token
    float bonus = 0;                                     // of the phrase ending here
    bool terminal = false;
  };
  uint32_t child(uint32_t node, int32_t token) const;  // 0 (the root) when absent
  std::vector<Node> nodes_{Node{}};
  size_t entries_ = 0, longest_ = 0;
};

}  // namespace lstmlm::tasks
