// Scoring text: per-word log-probabilities, per-line totals and KenLM-style perplexities.
// Typed inputs -> typed results (no printing). Rules (docs/scoring.md):
//  - sentence mode: state reset per line; the stream is [start] + line tokens + [eos], start = bos_token,
//    else eos_token, else none (then the first token is context only); eos appended when the model has
//    one, unless append_eos is false. An empty line is scored as just eos (or skipped: skip_empty).
//  - document mode: one stream across all lines (and calls), each line's tokens followed by eos, as the
//    PyTorch word_language_model corpus reader builds it; a char model whose vocabulary holds "\n" gets
//    "\n" there instead (char-rnn trains on the text's bytes, line breaks included, and eos is no line
//    break), so the stream is the file's own characters: a CRLF line end is "\r" "\n" when the
//    vocabulary has "\r", and a last line without a line break gets nothing. The first token of the whole
//    stream is predicted from the start token as in sentence mode (context only when there is none). Sentence
//    mode never appends "\n": a line there is a sentence, ended by eos when the model has one.
//  - OOV: with unk_token scored as unk and counted; without one skipped (not fed, not scored, counted).
//  - perplexity as KenLM's query: including OOVs exp(-sum ln p / tokens) over every scored token (eos
//    included); excluding OOVs exp(-(sum ln p - sum over OOVs) / (tokens - OOV tokens)).
//  - measures (ScoreOptions::entropy, rank): per scored word, from the full distribution it was predicted
//    from (Engine::score with StepMeasures); a word that is not scored has none.
//  - Aggregate::Words (char models): the records become whitespace-separated words (a char token whose
//    string is all Python whitespace separates them). A word's log-prob is the sum of its characters',
//    of the whitespace that follows it and, for a line's last word, of the appended eos, so the words of
//    a line sum to its total; whitespace before the first word goes to the first word; a line without a
//    word gives one record (the eos, or its whitespace). A word is scored only when all of its parts
//    are (a context-only first character or a skipped OOV leaves it unscored); its entropy is the one
//    before its first non-whitespace character; rank is refused. The line totals and the summary stay
//    per character.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/normalize.hpp"
#include "lstmlm/tasks/cache.hpp"
#include "lstmlm/tasks/input.hpp"
#include "lstmlm/tasks/window.hpp"

namespace lstmlm::tasks {

enum class ContextMode { Sentence, Document };
enum class Aggregate { Tokens, Words };
// Full: ln p, normalised over the vocabulary. Skip: the target's logit alone, no normaliser (a model trained
// to be self-normalised, whose log-sum-exp stays near 0): only the target's row of the output layer is read.
enum class Softmax { Full, Skip };
// How an input line ended in its file. Only a char model's document stream feeds it as characters
// ("\r" when the vocabulary has it, then "\n"; nothing for a last line without a line break); every
// other mode appends eos whatever the line end was, as PyTorch's corpus reader does.
enum class LineEnd : uint8_t { Lf, CrLf, None };

struct ScoreOptions {
  ContextMode context = ContextMode::Sentence;
  bool append_eos = true;  // false: --no-eos (no line-end token at all, eos or "\n")
  // false: no start token (as for a model without bos/eos): a line's first token is context only
  // (KenLM's bos=False; the Python module's score(..., bos=False)).
  bool add_start = true;
  OovPolicy oov = OovPolicy::Skip;
  bool skip_empty = false;  // empty lines (no tokens) produce a skipped record and are not fed
  // Every line's tokens are taken from it as the line is tokenized (a request's bound); null: none.
  std::shared_ptr<TokenBudget> budget{};
  bool ids_input = false;  // lines are whitespace-separated token ids
  // Applied to each text line before it is tokenized (lstmlm/normalize.hpp; not with ids_input).
  Normalization normalize = Normalization::None;
  int batch_size = 64;   // sentence mode: lines per engine batch
  bool entropy = false;  // fill WordScore::entropy
  bool rank = false;     // fill WordScore::rank (not with Aggregate::Words)
  Aggregate aggregate = Aggregate::Tokens;
  // Pad / Window: every scored token is predicted from the window of the stream before it (the line's in
  // sentence mode, the whole stream's in document mode; the start token included), from the zero state,
  // as a Keras app's model.predict on pad_sequences does (tasks/window.hpp). Stateful: the state carries.
  WindowOptions window{};
  // The continuous cache pointer over the document's last window tokens (tasks/cache.hpp): document mode,
  // stateful, without entropy, rank or aggregated words.
  CacheOptions cache{};
  // Skip: every score is the target's logit (Softmax); not with entropy, the cache or a fixed window.
  Softmax softmax = Softmax::Full;
  // A right-to-left model (trained on sentences with their words reversed): each line's tokens are fed and
  // scored last to first, the start token still first and the line end still last, as Kaldi's backward
  // RNNLMs read a sentence; the records list the tokens in that order. Sentence mode only.
  bool reverse = false;

  // Throws UsageError naming the option (as the CLI spells it) when a value is out of range or two options
  // conflict: batch_size in [1, kMaxBatch], the window's length, rank with Aggregate::Words, normalize
  // with ids_input, softmax skip with entropy, the cache or a window.
  void validate() const;
};

struct WordScore {
  std::string token;  // surface form after lowercasing/filtering (ids input: the vocabulary string)
  int32_t id = -1;    // -1: OOV without unk_token (skipped); also every Aggregate::Words record
  bool oov = false;
  bool eos = false;     // the appended line-end token: eos, or a char model's "\n" in document mode
  bool scored = false;  // false: context only (no start token) or skipped OOV
  // ln p when scored: a float from a neural model (its engine's), a double from an n-gram model (whose
  // log10 values would not survive a float's rounding to 1e-6).
  double logprob = 0.0;
  // When scored and asked for (ScoreOptions): the entropy in nats of the distribution the word was
  // predicted from, and the rank of the word in it (1 + tokens with a strictly greater logit).
  float entropy = 0.0f;
  int32_t rank = 0;
  // The tokens the model has been fed since its last reset before this one, the start token included: an
  // LSTM's "n-gram" is that context plus the word (KenLM's length, printed by the kenlm and srilm layouts).
  int64_t context = 0;
  // An n-gram model's score: the length of the n-gram it used (KenLM's); 0 for a neural model, whose length
  // is context + 1.
  int32_t ngram = 0;
};

struct LineScore {
  uint64_t line = 0;     // 1-based, within its source
  bool skipped = false;  // empty line under skip_empty
  std::vector<WordScore> words;
  double logprob = 0;      // sum of ln p of the scored words
  double oov_logprob = 0;  // the part of logprob from OOVs scored as unk
  int64_t tokens = 0;      // scored words (eos included)
  int64_t oovs = 0;        // OOV words (scored as unk or skipped)
  int64_t oov_tokens = 0;  // OOV words that were scored (as unk)
  int64_t nonfinite = 0;   // scored words whose log-prob is NaN or infinite (counted in tokens too)
};

struct ScoreSummary {
  int64_t sentences = 0;  // lines not skipped
  int64_t skipped = 0;
  int64_t tokens = 0, oovs = 0, oov_tokens = 0;
  int64_t nonfinite = 0;  // scored words with a NaN or infinite log-prob: the totals are then not finite
  double logprob = 0, oov_logprob = 0;
  void add(const LineScore& l);
  void add(const ScoreSummary& other);  // the two summaries' lines together
  double perplexity() const;            // including OOVs (NaN when nothing was scored)
  double perplexity_excl_oov() const;   // excluding OOVs
};

class Scorer {
 public:
  // Throws UsageError for options the model cannot take (Aggregate::Words on a word model, or with rank).
  Scorer(Engine& engine, ScoreOptions opt);
  // Scores a block of lines (without line ends); the first is line `first_line` of `source`.
  // `ends[i]` is how line i ended (empty: every line ended with "\n"). Document mode carries the state
  // to the next call. Results are in input order.
  std::vector<LineScore> score(const std::vector<std::string>& lines, const std::string& source,
                               uint64_t first_line, const std::vector<LineEnd>& ends = {});
  // With a cache (ScoreOptions::cache): what it changed so far; null without one.
  const CacheStats* cache_stats() const { return cache_ ? &cache_->stats() : nullptr; }

 private:
  void run_sentences(std::vector<LineScore>& out, const std::vector<std::vector<int32_t>>& streams);
  void run_document(std::vector<LineScore>& out, const std::vector<std::vector<int32_t>>& streams);
  void run_windowed(std::vector<LineScore>& out, const std::vector<std::vector<int32_t>>& streams);
  Engine* engine_;
  ScoreOptions opt_;
  int32_t start_ = -1;
  // Document mode: the state after every fed token, and the last token of the stream (not yet fed).
  State doc_state_;
  int32_t doc_pending_ = -1;
  int64_t doc_context_ = 0;  // document mode: WordScore::context of the stream's next token
  // Windowed document mode: the stream so far (its last window length tokens at most; start token first).
  std::vector<int32_t> doc_history_;
  std::optional<NeuralCache> cache_;
};

}  // namespace lstmlm::tasks
