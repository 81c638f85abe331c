// `lstmlm mix-tune`'s results as records: one per EM iteration, one per model alone, and the result (the
// weights, one per model in the order given, and the dev perplexity with them).
#pragma once
#include <string>
#include <vector>

#include "lstmlm/report/record.hpp"
#include "lstmlm/tasks/mix.hpp"

namespace lstmlm::report {

Record mix_iteration_record(int iteration, const tasks::MixIteration& it);
Record mix_model_record(const std::string& model, double perplexity);
Record mix_result_record(const std::vector<std::string>& models, const tasks::MixIteration& last,
                         int64_t tokens);

}  // namespace lstmlm::report
