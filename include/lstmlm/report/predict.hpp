// `lstmlm predict`'s result as a record: the context, the ids fed (and the pads of a Pad window), and the
// top candidates with their probabilities.
#pragma once
#include <string>

#include "lstmlm/report/record.hpp"
#include "lstmlm/tasks/predict.hpp"

namespace lstmlm::report {

Record prediction_record(const std::string& context, const tasks::Prediction& p, bool padded);
// One candidate: {"token", "id", "prob", "logprob"}.
Value candidate_value(const tasks::Candidate& c);

}  // namespace lstmlm::report
