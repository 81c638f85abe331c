// Beam-search hypotheses as records (report/generate.hpp); the per-token records are score's.
#include <string>
#include <utility>
#include <vector>

#include "lstmlm/report/generate.hpp"
#include "lstmlm/report/score.hpp"

namespace lstmlm::report {

Record hypothesis_record(const Model& model, const tasks::GenerateOptions& gen,
                         const tasks::BeamHypothesis& h) {
  const Tokenizer& tok = model.tokenizer();
  const ScoreView view{Verbosity::Word, Format::Jsonl, Units::Default};
  std::vector<Value> toks, ids;
  toks.reserve(h.tokens.size());
  for (size_t i = 0; i < h.tokens.size(); ++i) {
    const auto& t = h.tokens[i];
    tasks::WordScore w;
    w.token = model.vocab().token(t.id);
    w.id = t.id;
    w.eos = tok.eos_id() && *tok.eos_id() == t.id;
    w.scored = true;
    w.logprob = t.logprob;
    toks.push_back(word_record(view, w, i + 1));
    ids.push_back(Value::integer(t.id));
  }
  const auto id_list = h.ids();
  Record r{"generate.hypothesis",
           {{"type", Value::str("hypothesis")},
            {"hypothesis", Value::integer(h.index)},
            {"prompt", Value::str(gen.prompt)},
            {"text", Value::str(tok.detokenize(id_list))},
            {"ids", Value::of_list(std::move(ids))},
            {"logprob", Value::num9(h.total_logprob)},
            {"score", Value::num9(h.score)},
            {"stopped_at_eos", Value::boolean(h.stopped_at_eos)}}};
  if (!gen.stop.empty())
    r.fields.push_back({"stopped_at", h.stopped_at.empty() ? Value::null() : Value::str(h.stopped_at)});
  r.fields.push_back({"tokens", Value::of_list(std::move(toks))});
  r.fields.push_back({"display", Value::str(tasks::sample_text(tok, gen.prompt, id_list)), true});
  return r;
}

}  // namespace lstmlm::report
