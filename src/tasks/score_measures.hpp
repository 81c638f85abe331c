// The psycholinguistic parts of scoring: per-word entropy and rank written back to a line's words, and
// a char model's records summed into whitespace-separated words (rules: lstmlm/tasks/score.hpp).
#pragma once
#include <cstdint>

#include "lstmlm/tasks/score.hpp"

namespace lstmlm::tasks::detail {

// As fill_line (score_lines.hpp) for the measures: one value per fed word, none for a context-only first
// word; a null array is not asked for.
void fill_measures(LineScore& l, const float* entropy, const int32_t* rank, bool first_is_context);

// Replaces the (character) records of a line by word records; the line's totals are unchanged.
void aggregate_words(LineScore& l);

}  // namespace lstmlm::tasks::detail
