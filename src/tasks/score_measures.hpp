// The psycholinguistic part of scoring that is not per step (fill_line writes the entropy and rank): a
// char model's records summed into whitespace-separated words (rules: lstmlm/tasks/score.hpp).
#pragma once
#include <cstdint>

#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tokenizer.hpp"

namespace lstmlm::tasks::detail {

// Replaces the (character) records of a line by word records; the line's totals are unchanged.
void aggregate_words(LineScore& l);
// The same for subword pieces (sentencepiece, bpe): a word starts where tok.join_text puts a space.
void aggregate_pieces(LineScore& l, const Tokenizer& tok);

}  // namespace lstmlm::tasks::detail
