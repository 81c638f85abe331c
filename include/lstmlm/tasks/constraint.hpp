// Constrained decoding (docs/generation.md): the generated text must stay within a vocabulary subset
// (`--allowed-words`) and match a regular expression (`--regex`). The pattern is compiled once into an
// automaton over bytes (a Thompson NFA, determinised lazily), and the automaton is lifted to the model's
// tokens: a cursor is (automaton state, how the next token's text joins the previous one), and each
// cursor's row of next cursors over the whole vocabulary is made once, on first use, and kept, so a step
// costs one lookup per hypothesis. A token is allowed when its text keeps the automaton alive; the end
// (eos) when the automaton accepts.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lstmlm/model.hpp"

namespace lstmlm::tasks {

// The regular-expression subset --regex accepts (docs/generation.md): literals, escapes (\n \t \r \f \v
// \xHH, \d \w \s and their negations, an escaped punctuation character), '.', classes [a-z] and [^...],
// the quantifiers * + ? {m} {m,} {m,n} (m, n <= 1000), alternation '|' and groups (...) or (?:...); a
// leading '^' and a trailing '$' are allowed and change nothing: the whole text must match. Matched over
// the text's bytes; '.' is any byte but "\n".
struct ConstraintSpec {
  std::string regex;                             // empty: no pattern
  std::optional<std::vector<int32_t>> allowed;   // the vocabulary subset; nullopt: every token
  std::string allowed_source = "allowed_words";  // what the subset came from, for messages
};

class Constraint {
 public:
  // Compiles the pattern (UsageError naming "regex" when it does not compile). `end` is the token that
  // ends a text (eos when generation stops at it), allowed only where the pattern accepts.
  static std::shared_ptr<const Constraint> create(const Model& model, const ConstraintSpec& spec,
                                                  std::optional<int32_t> end);
  // The ids of the words of a list (one a line, the vocabulary's spelling; blank lines and words outside
  // the vocabulary are passed over). InputError naming `source` when none is in the vocabulary.
  static std::vector<int32_t> allowed_ids(const Model& model, const std::vector<std::string>& words,
                                          const std::string& source);
  // The same from a file (one word a line).
  static std::vector<int32_t> load_allowed(const Model& model, const std::string& path);

  ~Constraint();
  int32_t start() const { return 0; }
  // The cursors after each token from `cursor`: row[id] = -1 where the token is refused. Made once per
  // cursor, then kept (thread-safe; the row stays valid while the Constraint lives).
  struct Row {
    const int32_t* next = nullptr;
    bool all = false;        // no token refused: the step's distribution is left as it is
    bool accepting = false;  // the text so far matches
    bool any = false;        // some token is allowed (the end token included)
  };
  Row row(int32_t cursor) const;
  // Whether the text at `cursor` matches, without making its row.
  bool accepts(int32_t cursor) const;
  // row(cursor).next with every token refused whose text would not end in a match (the end token kept when
  // the text matches already): the last step a length limit allows. Written to `out` (V entries); false
  // when no token is left.
  bool finishing(int32_t cursor, std::vector<int32_t>& out) const;
  // The option its errors name: "regex" when it has a pattern, else "allowed_words".
  const char* key() const;
  // The automaton states made so far (bench and tests).
  size_t automaton_states() const;

  struct Impl;

 private:
  explicit Constraint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lstmlm::tasks
