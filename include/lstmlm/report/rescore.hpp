// `lstmlm rescore`'s results as records: one per hypothesis (the LM's scores, the input's scores, the
// combination, whether it is its utterance's best) and the summary.
#pragma once
#include <string>
#include <vector>

#include "lstmlm/report/record.hpp"
#include "lstmlm/tasks/rescore.hpp"

namespace lstmlm::report {

struct RescoreLayout {
  std::vector<std::string> names;  // the input's score names, in order
  bool interpolated = false;       // lm_interpolated is printed
  bool backward = false;           // lm_backward and lm_bidirectional are printed
};

// tsv puts each score in a column of its own (a list as space-separated numbers); the other formats nest
// them in "scores".
Record hyp_record(Format f, const RescoreLayout& lay, const std::string& file, const tasks::Hypothesis& h,
                  const tasks::HypothesisScore& s);
Record rescore_summary_record(int64_t utterances, int64_t hypotheses, int64_t tokens, int64_t oovs,
                              const tasks::PrefixStats& st);

}  // namespace lstmlm::report
