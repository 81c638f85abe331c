// Scoring JSONL documents (one JSON object per line) and writing each back with its totals: the perplexity
// filter of `lstmlm score --input-format jsonl` (docs/scoring.md, "JSONL documents"). Typed inputs -> typed
// results (no printing). Rules:
//  - A document is one line holding a JSON object (nlohmann::json, strict: no comments, no trailing text);
//    its text is the string field `text_field` at the top level.
//  - The text is read as the content of a file would be: lines end at "\n" (a "\r" before it is stripped,
//    as a CRLF line end), a final "\n" ends the last line (it does not start an empty one), and a last
//    line without "\n" is a line too; so an empty text has no line (tokens 0, perplexity NaN). Each line is
//    scored by tasks::Scorer with `score` exactly as `lstmlm score` scores that line of a file.
//  - Sentence mode: every line is a sentence; the lines of all documents of a call are scored in one
//    Scorer call (the engine is batch-invariant: the numbers are those of each document alone). Document
//    mode: one stream per document, from the start state, so no document depends on another.
//  - A document's totals are the sums over its lines (ScoreSummary::add); its perplexity is
//    ScoreSummary::perplexity() (OOVs included; NaN when nothing was scored).
//  - The output line is the input line's own bytes (never re-serialized), trailing whitespace removed, its
//    final '}' replaced by `, "logprob": L, "tokens": N, "oovs": K, "perplexity": P}` (no leading ", " in an
//    empty object); L (natural log) and P as %.9g, a non-finite value as null.
//  - Errors, per document (Status::Error, never thrown; the other documents are still scored): invalid JSON
//    (the message names nlohmann's byte position), not an object, the text field missing or not a
//    string, a top-level "logprob", "tokens", "oovs" or "perplexity" already present (the output would
//    hold it twice), and whatever the Scorer refuses in the text (invalid UTF-8, an OOV word under
//    OovPolicy::Error, too many tokens on a line).
//  - Filter: Filtered when perplexity < min_perplexity or > max_perplexity; a NaN perplexity is filtered
//    when either bound is set.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::tasks {

struct JsonlOptions {
  std::string text_field = "text";
  // How each document's lines are scored (context, append_eos, oov, skip_empty, ids_input, window,
  // batch_size). entropy, rank and Aggregate::Words add nothing to a document's totals and are refused.
  ScoreOptions score;
  // Keep a document only when min_perplexity <= perplexity <= max_perplexity (each bound when set).
  std::optional<double> min_perplexity, max_perplexity;
};

struct JsonlDocument {
  enum class Status { Kept, Filtered, Error };
  Status status = Status::Kept;
  // Kept and Filtered: its output line is report::jsonl_document (lstmlm/report/jsonl.hpp).
  // Error: the one-line message "SOURCE:LINE: ..." (no "lstmlm: " prefix).
  std::string error;
  // The document's totals when scored (Kept, Filtered): logprob, tokens, oovs, ...; `line` is the JSONL
  // line number; `words` is left empty.
  LineScore total;
  double perplexity = 0;
};

class JsonlScorer {
 public:
  // Throws UsageError for an empty text_field, a NaN bound, min_perplexity > max_perplexity, or score
  // options a document total cannot honour (entropy, rank, Aggregate::Words); and whatever Scorer throws.
  JsonlScorer(Engine& engine, JsonlOptions opt);
  // Scores a block of JSONL lines (without line ends); the first is line `first_line` of `source`.
  // One result per input line, in input order. A bad document gives Status::Error for that line only and
  // never throws; the other documents of the block are still scored.
  std::vector<JsonlDocument> score(const std::vector<std::string>& lines, const std::string& source,
                                   uint64_t first_line);

 private:
  Engine* engine_;
  JsonlOptions opt_;
};

}  // namespace lstmlm::tasks
