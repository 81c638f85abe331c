// Turning one input line into the token ids fed to the model, shared by score and predict.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tokenizer.hpp"

namespace lstmlm::tasks {

// What to do with an out-of-vocabulary word when the model has no unk_token.
enum class OovPolicy { Skip, Error };

// Where a line came from, for error messages ("FILE:LINE: ...").
struct LineRef {
  std::string source;  // file name, "-" for stdin
  uint64_t line = 0;   // 1-based
  // The InputError of this line: "<source>:<line>: <detail>", the place kept as data.
  InputError error(std::string detail) const { return InputError(source, line, std::move(detail)); }
};

// The tokens one request may read in all, over every text it tokenizes (the server's --max-tokens): each
// reader takes what it tokenized, so the bound is counted where the text is tokenized, for every endpoint.
// take() throws LimitError naming `what` and the bound once more than `limit` were taken. Thread-safe.
class TokenBudget {
 public:
  explicit TokenBudget(size_t limit) : limit_(limit) {}
  void take(size_t n) {
    const size_t before = taken_.fetch_add(n);
    if (before + n > limit_)
      throw LimitError("more than " + std::to_string(limit_) +
                       " tokens in one request (--max-tokens): send less, or split the request");
  }
  size_t limit() const { return limit_; }

 private:
  size_t limit_;
  std::atomic<size_t> taken_{0};
};

// Tokens per input line. Scoring keeps a record per token (about 110 bytes, and about 1 KB at -v word until
// the line is written), so this bounds the memory of one line (docs/errors.md). Far above any sentence
// or paragraph; a document on one line is split, or scored in --context document over several lines.
inline constexpr size_t kMaxLineTokens = size_t{1} << 20;

// Tokenizes `text` (or parses it as whitespace-separated ids when `ids_input`); more than kMaxLineTokens
// tokens is an InputError, found before more are made. OOV words without an
// unk id keep id -1 (they are skipped by the tasks) unless policy is Error, which throws InputError.
// Every error is an InputError prefixed with `where`.
std::vector<Token> read_tokens(const Model& model, std::string_view text, bool ids_input, OovPolicy policy,
                               const LineRef& where);

// A small file a request names (a boost file, an API key file), read whole with the model readers' checks: a
// regular file only (a FIFO or a device is refused before it is read), at most `max_bytes` (checked before
// and while reading). Throws InputError "<path>: ..." otherwise.
std::string read_small_file(const std::string& path, uint64_t max_bytes);

// What a message about the OOV `word` adds: "; the vocabulary is lowercase-only: reconvert with convert.py
// --lowercase" when the model has no unk_token, its vocabulary has no uppercase letter, the tokenizer does
// not lowercase and `word` has an uppercase letter (a cased text against an uncased vocabulary); else "".
std::string oov_hint(const Model& model, const std::string& word);

// The sentence-start token: bos_token, else eos_token, else none (-1). The one rule for score's first
// token, predict's text contexts and generate's prompt.
int32_t start_token(const Tokenizer& tok);

// Orders row indices longest first (stable: equal lengths keep input order), so each batch holds rows of
// similar length. The engine is batch-invariant, so the grouping changes speed only, never a number.
template <class Length>
void longest_first(std::vector<size_t>& order, Length length) {
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return length(a) > length(b); });
}

}  // namespace lstmlm::tasks
