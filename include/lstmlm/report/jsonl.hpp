// The JSONL perplexity filter's output line (`lstmlm score --input-format jsonl`, Python's
// Model.score_jsonl): the input document's own bytes, never re-serialized, trailing whitespace removed and
// its final '}' replaced by the totals: ', "logprob": L, "tokens": N, "oovs": N, "perplexity": P}' (numbers
// as every writer prints them: 9 significant digits, null when not finite).
#pragma once
#include <string>
#include <string_view>

#include "lstmlm/tasks/jsonl.hpp"

namespace lstmlm::report {

// `input`: the document's line as read (a JSON object, as JsonlScorer parsed it); `d`: its result (Kept or
// Filtered).
std::string jsonl_document(std::string_view input, const tasks::JsonlDocument& d);

}  // namespace lstmlm::report
