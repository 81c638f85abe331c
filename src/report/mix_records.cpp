#include <utility>
#include <vector>

#include "lstmlm/report/mix.hpp"

namespace lstmlm::report {

namespace {
Value weights_value(const std::vector<double>& w) {
  std::vector<Value> v;
  v.reserve(w.size());
  for (double x : w) v.push_back(Value::num9(x));
  return Value::of_list(std::move(v));
}
}  // namespace

Record mix_iteration_record(int iteration, const tasks::MixIteration& it) {
  return {"mix.iteration",
          {{"type", Value::str("iteration")},
           {"iteration", Value::integer(iteration)},
           {"weights", weights_value(it.weights)},
           {"perplexity", Value::num9(it.perplexity)}}};
}

Record mix_model_record(const std::string& model, double perplexity) {
  return {
      "mix.model",
      {{"type", Value::str("model")}, {"model", Value::str(model)}, {"perplexity", Value::num9(perplexity)}}};
}

Record mix_result_record(const std::vector<std::string>& models, const tasks::MixIteration& last,
                         int64_t tokens) {
  std::vector<Value> names;
  for (const auto& m : models) names.push_back(Value::str(m));
  return {"mix.result",
          {{"type", Value::str("result")},
           {"models", Value::of_list(std::move(names))},
           {"weights", weights_value(last.weights)},
           {"perplexity", Value::num9(last.perplexity)},
           {"tokens", Value::integer(tokens)}}};
}

}  // namespace lstmlm::report
