// `lstmlm generate`'s samples as records: keys in the documented order (type, sample, seed, prompt, text,
// tokens, logprob, stopped_at_eos); the display field (prompt joined with the text) is for the text format.
#pragma once
#include "lstmlm/model.hpp"
#include "lstmlm/ngram.hpp"
#include "lstmlm/report/record.hpp"
#include "lstmlm/tasks/beam.hpp"
#include "lstmlm/tasks/generate.hpp"

namespace lstmlm::report {

Record sample_record(const Model& model, const tasks::GenerateOptions& gen, const tasks::GeneratedSample& s);
// One generated token: {"token", "id", "prob", "logprob"}.
Value token_value(const Model& model, const tasks::GeneratedToken& t);
// One beam-search hypothesis (type "hypothesis"): its rank, the prompt, text, ids, the per-token records
// `score` prints for that text (report::word_record: token, id, oov, logprob, log10prob), the model's total
// ln p, the search's score and how it ended.
Record hypothesis_record(const Model& model, const tasks::GenerateOptions& gen,
                         const tasks::BeamHypothesis& h);
// An n-gram model's sample (generate -m FILE.arpa): the same keys, the words joined by tasks::NgramTextJoin.
Record sample_record(const NgramModel& model, const tasks::GenerateOptions& gen,
                     const tasks::GeneratedSample& s);

}  // namespace lstmlm::report
