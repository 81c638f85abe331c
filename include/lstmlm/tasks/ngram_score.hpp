// Scoring text with an ARPA n-gram model as KenLM's query does: the records, totals and perplexities of
// tasks::Scorer (score.hpp), so every output format and front end takes them as they take a neural model's.
// Rules (docs/mixing.md):
//  - a line is split on ASCII whitespace into words (after --normalize); a word that is not a unigram is
//    <unk> (counted as an OOV and scored, as KenLM does; OovPolicy::Error refuses it);
//  - sentence mode: each line from <s> (context only, never scored), </s> appended and scored unless
//    append_eos is false; without the start token (add_start false) the first word is scored from the
//    null context, as KenLM's query -n does (a neural model has no null context: there it is context only);
//  - document mode: one state across the lines, each line still ended by </s>;
//  - WordScore::ngram is the length of the n-gram each score used, WordScore::context the words the state
//    held before it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "lstmlm/ngram.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::tasks {

class NgramScorer {
 public:
  // Throws UsageError naming the option an n-gram model cannot take: entropy, rank, aggregate words, ids,
  // a fixed window.
  NgramScorer(std::shared_ptr<const NgramModel> model, ScoreOptions opt);
  // As Scorer::score: the lines (without line ends) from line `first_line` of `source`; document mode
  // carries the state to the next call.
  std::vector<LineScore> score(const std::vector<std::string>& lines, const std::string& source,
                               uint64_t first_line);

 private:
  std::shared_ptr<const NgramModel> model_;
  ScoreOptions opt_;
  NgramState doc_state_;
  bool doc_started_ = false;
};

// The words of a line as an n-gram model reads it: split on ASCII whitespace.
std::vector<std::string> ngram_words(std::string_view line);

}  // namespace lstmlm::tasks

namespace lstmlm::tasks {

struct PredictOptions;
struct Prediction;

// `lstmlm predict -m FILE.arpa`: the next words after each context by the n-gram model's probabilities.
// A context is read as a line of score -m FILE.arpa (split on ASCII whitespace, <unk> for a word that is
// not a unigram, from <s> unless add_start is false); every word of the model but <s> is a candidate
// (</s> and <unk> included), ranked by ln p, ties by ascending id; Prediction::ids are the model's word ids
// fed (<s> first). `prefix` keeps the words that start with it (byte-wise; <unk> and </s> never).
// UsageError naming what an n-gram model cannot take (ids input, a window, a boost, a mixture); InputError
// "SOURCE:LINE: ..." for invalid UTF-8 or an OOV under OovPolicy::Error.
std::vector<Prediction> predict_ngram(const NgramModel& model, const std::vector<std::string>& contexts,
                                      const PredictOptions& opt, const std::string& source,
                                      uint64_t first_line);

}  // namespace lstmlm::tasks
