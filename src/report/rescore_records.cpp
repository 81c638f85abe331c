#include <utility>

#include "lstmlm/report/rescore.hpp"
#include "lstmlm/units.hpp"

namespace lstmlm::report {

namespace {

Value score_value(const std::vector<double>& v, Format f) {
  if (v.size() == 1) return Value::num9(v[0]);
  if (f == Format::Tsv) {  // a list cell stays one cell: space-separated, as it is read
    std::string s;
    for (double x : v) s += (s.empty() ? "" : " ") + cell(Value::num9(x));
    return Value::str(s);
  }
  std::vector<Value> list;
  for (double x : v) list.push_back(Value::num9(x));
  return Value::of_list(std::move(list));
}

}  // namespace

Record hyp_record(Format f, const RescoreLayout& lay, const std::string& file, const tasks::Hypothesis& h,
                  const tasks::HypothesisScore& s) {
  Record r{"rescore.hyp",
           {{"type", Value::str("hyp")},
            {"file", Value::str(file)},
            {"utt", Value::str(h.utt)},
            {"id", Value::str(h.id)},
            {"n", Value::integer(h.n)},
            {"tokens", Value::integer(s.lm.tokens)},
            {"oovs", Value::integer(s.lm.oovs)},
            {"words", Value::integer(s.words)},
            {"lm_logprob", Value::num9(s.lm.logprob)},
            {"lm_log10prob", Value::num9(s.lm.logprob / kLn10)}}};
  if (lay.interpolated) r.fields.push_back({"lm_interpolated", Value::num9(s.lm_forward)});
  if (lay.backward) {
    r.fields.push_back({"lm_backward", Value::num9(s.backward_logprob)});
    r.fields.push_back({"lm_bidirectional", Value::num9(s.lm_logprob)});
  }
  if (f == Format::Tsv) {
    for (size_t k = 0; k < lay.names.size(); ++k)
      r.fields.push_back({lay.names[k], score_value(h.scores[k], f)});
  } else {
    Fields scores;
    for (size_t k = 0; k < lay.names.size(); ++k)
      scores.push_back({lay.names[k], score_value(h.scores[k], f)});
    r.fields.push_back({"scores", Value::of_record(std::move(scores))});
  }
  r.fields.push_back({"combined", Value::num9(s.combined)});
  r.fields.push_back({"best", Value::boolean(s.best)});
  r.fields.push_back({"hyp", Value::str(h.text)});
  return r;
}

Record rescore_summary_record(int64_t utterances, int64_t hypotheses, int64_t tokens, int64_t oovs,
                              const tasks::PrefixStats& st) {
  return {"rescore.summary",
          {{"type", Value::str("summary")},
           {"utterances", Value::integer(utterances)},
           {"hypotheses", Value::integer(hypotheses)},
           {"tokens", Value::integer(tokens)},
           {"oovs", Value::integer(oovs)},
           {"steps", Value::integer(st.steps)},
           {"computed", Value::integer(st.computed)}}};
}

}  // namespace lstmlm::report
