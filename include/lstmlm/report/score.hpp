// `lstmlm score`'s results as records: the fields of a line, its words and the summary, in the units
// and with the measures the options ask for, and the table layout of the tabular formats.
#pragma once
#include <cstdint>
#include <string>

#include "lstmlm/report/record.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/units.hpp"

namespace lstmlm::report {

enum class Verbosity { Word, Sentence, Summary };

using lstmlm::Units;  // lstmlm/units.hpp

struct ScoreView {
  Verbosity verbosity = Verbosity::Word;
  Format format = Format::Text;
  Units units = Units::Default;
  bool entropy = false, rank = false;
  bool words = false;  // --aggregate words: the records are words (no vocabulary id)
  // --softmax skip: the scores are logits; every line and summary record says so ("softmax": "skip", a
  // column of the tables, a note in the text layout). The n-gram layouts have no place for it.
  bool logits = false;
};

// Whether the model's state was reset at this line (sentence mode, or a document's first line). Only the
// kenlm and srilm layouts print it.
struct StreamPos {
  bool reset = true;
};

// The n-gram layouts (kenlm, srilm): every line record carries its words, whatever the verbosity.
bool ngram_layout(Format f);

// One word of a line record (its 1-based `position`), with the fields the view asks for.
Value word_record(const ScoreView& v, const tasks::WordScore& w, size_t position);
Record line_record(const ScoreView& v, const std::string& file, const tasks::LineScore& l, uint64_t sentence,
                   StreamPos pos = {});
Record summary_record(const ScoreView& v, const tasks::ScoreSummary& s);
// The table view (tsv, lmzoo): one row per word, per line, or the summary alone.
Table score_table(const ScoreView& v);

}  // namespace lstmlm::report
