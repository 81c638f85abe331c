#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "lstmlm/report/generate.hpp"
#include "lstmlm/tasks/ngram_generate.hpp"

namespace lstmlm::report {

Value token_value(const Model& model, const tasks::GeneratedToken& t) {
  return Value::of_record({{"token", Value::str(model.vocab().token(t.id))},
                           {"id", Value::integer(t.id)},
                           {"prob", Value::num9(std::exp(static_cast<double>(t.logprob)))},
                           {"logprob", Value::num9(t.logprob)}});
}

Record sample_record(const Model& model, const tasks::GenerateOptions& gen, const tasks::GeneratedSample& s) {
  std::vector<Value> toks;
  toks.reserve(s.tokens.size());
  for (const auto& t : s.tokens) toks.push_back(token_value(model, t));
  auto ids = s.ids();
  std::string display = tasks::sample_text(model.tokenizer(), gen.prompt, ids);
  Record r{"generate.sample",
           {{"type", Value::str("sample")},
            {"sample", Value::integer(s.index)},
            {"seed", Value::uinteger(gen.seed)},
            {"prompt", Value::str(gen.prompt)},
            {"text", Value::str(model.tokenizer().detokenize(ids))},
            {"tokens", Value::of_list(std::move(toks))},
            {"logprob", Value::num9(s.total_logprob)},
            {"stopped_at_eos", Value::boolean(s.stopped_at_eos)},
            {"display", Value::str(std::move(display)), true}}};
  if (!gen.stop.empty())
    r.fields.insert(r.fields.end() - 1,
                    {"stopped_at", s.stopped_at.empty() ? Value::null() : Value::str(s.stopped_at)});
  return r;
}

Record sample_record(const NgramModel& model, const tasks::GenerateOptions& gen,
                     const tasks::GeneratedSample& s) {
  std::vector<Value> toks;
  tasks::NgramTextJoin text_join(model, ""), display_join(model, gen.prompt);
  std::string text, display = gen.prompt;
  for (const auto& t : s.tokens) {
    toks.push_back(Value::of_record({{"token", Value::str(model.word(static_cast<uint32_t>(t.id)))},
                                     {"id", Value::integer(t.id)},
                                     {"prob", Value::num9(std::exp(static_cast<double>(t.logprob)))},
                                     {"logprob", Value::num9(t.logprob)}}));
    text += text_join.piece(t.id);
    display += display_join.piece(t.id);
  }
  return Record{"generate.sample",
                {{"type", Value::str("sample")},
                 {"sample", Value::integer(s.index)},
                 {"seed", Value::uinteger(gen.seed)},
                 {"prompt", Value::str(gen.prompt)},
                 {"text", Value::str(std::move(text))},
                 {"tokens", Value::of_list(std::move(toks))},
                 {"logprob", Value::num9(s.total_logprob)},
                 {"stopped_at_eos", Value::boolean(s.stopped_at_eos)},
                 {"display", Value::str(std::move(display)), true}}};
}

}  // namespace lstmlm::report
