// The per-line parts of scoring shared by the Scorer (score.cpp) and the prefix-sharing rescorer
// (rescore.cpp): a line as the records of its words, the ids it feeds, and its log-probs written back.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lstmlm/model.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::tasks::detail {

// The words of one line (line_end_id appended as the options say), with line number and OOV counts set; an
// empty line under skip_empty comes back skipped. Throws InputError prefixed with `where`.
// `end` is how the line ended in its file (it matters only for line_end_chars).
LineScore tokenize_line(const Model& model, const std::string& text, const ScoreOptions& opt,
                        const LineRef& where, LineEnd end = LineEnd::Lf);

// The token appended to every line (none under --no-eos): in document mode a char model's "\n" when its
// vocabulary holds one, else eos_token (none when the model has no eos).
std::optional<int32_t> line_end_id(const Model& model, const ScoreOptions& opt);

// True when the line end is fed as the file's characters (document mode, a char model with "\n"):
// then a CRLF feeds "\r" first (if the vocabulary has it) and a last line without a line break nothing.
bool line_end_chars(const Model& model, const ScoreOptions& opt);

// The ids of a line's words in the order they are fed (skipped OOVs left out), eos included.
// `zero` >= 0: an OOV word is fed as that id (the vocabulary size: a one-hot model's zero input,
// tokenizer.oov_input "zero"), and not scored.
std::vector<int32_t> fed_ids(const LineScore& l, int32_t zero = -1);

// Writes the target log-probs back to the fed words of a line, in order, and totals the line.
// `lp` holds one value per fed word; with `first_is_context` the first fed word has no value (it was
// context only). A non-finite value is a scored word like any other, and counted (NaN is not a marker).
// `entropy` and `rank`, when not null, hold the measures in the same order and are written beside.
void fill_line(LineScore& l, const float* lp, bool first_is_context, const float* entropy = nullptr,
               const int32_t* rank = nullptr);
// The same from double log-probs (the double-precision path's, kept to the last digit); `zero_oov`: the OOV
// words were fed (fed_ids with a zero id), so each has a value, which is passed over.
void fill_line(LineScore& l, const double* lp, bool first_is_context, const float* entropy,
               const int32_t* rank, bool zero_oov);

// The row plan of a scored stream, one rule for the Scorer and Fidelity. A sentence: inputs = [start] +
// ids[:-1], targets = ids; without a start token (start < 0) the first id is context only: inputs =
// ids[:-1], targets = ids[1:]. ids is not empty.
void sentence_row(std::span<const int32_t> ids, int32_t start, std::vector<int32_t>& inputs,
                  std::vector<int32_t>& targets);
// A document's next piece, its state carried from the previous one: the pending token (the start token, or
// the previous piece's last id) fed first, then ids[:-1]; targets = ids. ids is not empty.
void stream_row(int32_t pending, std::span<const int32_t> ids, std::vector<int32_t>& inputs,
                std::vector<int32_t>& targets);

// The rows of a windowed pass (Scorer's and Fidelity's run_windowed): every scored token is one row, its
// context the stream before it (tasks/window.hpp cuts the window). Sentence mode: line i's stream is
// [start] + its ids; document mode: one stream, `history` first. A line's rows follow in order from
// first_row[i]; first_is_context[i] when its first id has nothing before it (no start token).
struct WindowRows {
  std::vector<std::vector<int32_t>> bufs;  // the rows point into these
  std::vector<std::span<const int32_t>> rows;
  std::vector<int32_t> targets;
  std::vector<size_t> first_row;
  std::vector<bool> first_is_context;
};
WindowRows window_rows(const std::vector<std::span<const int32_t>>& lines, bool document, int32_t start,
                       const std::vector<int32_t>& history);
// Document mode: the last `window` ids of the stream become the next call's history.
void keep_history(WindowRows& w, int window, std::vector<int32_t>& history);

}  // namespace lstmlm::tasks::detail
