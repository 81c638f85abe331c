#include <utility>
#include <vector>

#include "lstmlm/report/predict.hpp"

namespace lstmlm::report {

Value candidate_value(const tasks::Candidate& c) {
  return Value::of_record({{"token", Value::str(c.token)},
                           {"id", Value::integer(c.id)},
                           {"prob", Value::num9(c.prob)},
                           {"logprob", Value::num9(c.logprob)}});
}

Record prediction_record(const std::string& context, const tasks::Prediction& p, bool padded) {
  std::vector<Value> ids, top;
  ids.reserve(p.ids.size());
  for (int32_t id : p.ids) ids.push_back(Value::integer(id));
  top.reserve(p.top.size());
  for (const auto& c : p.top)
    top.push_back(p.logits ? Value::of_record({{"token", Value::str(c.token)},
                                               {"id", Value::integer(c.id)},
                                               {"logit", Value::num9(c.logprob)}})
                           : candidate_value(c));
  Record r{"predict",
           {{"type", Value::str("prediction")},
            {"context", Value::str(context)},
            {"ids", Value::of_list(std::move(ids))}}};
  if (padded) r.fields.push_back({"pads", Value::integer(static_cast<int64_t>(p.pads))});
  // Said in every record: these candidates carry logits, which are no probabilities.
  if (p.logits) r.fields.push_back({"softmax", Value::str("skip")});
  r.fields.push_back({"top", Value::of_list(std::move(top))});
  return r;
}

}  // namespace lstmlm::report
