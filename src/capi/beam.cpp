// The C API's beam search (include/lstmlm/lstmlm.h) on tasks/beam.hpp.
#include "lstmlm/tasks/beam.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "capi.hpp"
#include "lstmlm/tasks/constraint.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/logit_bias.hpp"

struct lstmlm_hypotheses {
  struct One {
    std::string text;
    std::vector<int32_t> ids;
    std::vector<float> logprobs;
    double logprob = 0, score = 0;
  };
  std::vector<One> list;
};

namespace {

// The options as this library knows them, from a caller's struct of `struct_size` bytes.
lstmlm_search_options known_options(const lstmlm_search_options* o) {
  lstmlm_search_options d = LSTMLM_SEARCH_OPTIONS_INIT;
  if (o == nullptr) return d;
  constexpr size_t known = sizeof(lstmlm_search_options);
  if (o->struct_size < known)
    throw lstmlm::UsageError("options->struct_size is " + std::to_string(o->struct_size) +
                             ", less than the " + std::to_string(known) +
                             " bytes of the first version (use LSTMLM_SEARCH_OPTIONS_INIT)");
  if (o->struct_size > known) {
    const auto* extra = reinterpret_cast<const unsigned char*>(o) + known;
    if (std::any_of(extra, extra + (o->struct_size - known), [](unsigned char b) { return b != 0; }))
      throw lstmlm::UsageError("options set fields this library version (" LSTMLM_VERSION ") does not know");
  }
  return *o;
}

}  // namespace

extern "C" {

LSTMLM_API lstmlm_status lstmlm_beam_search(const lstmlm_model* model, const char* prompt, size_t prompt_len,
                                            const lstmlm_search_options* options, lstmlm_hypotheses** out) {
  return lstmlm::capi::guarded("lstmlm_beam_search", [&] {
    using namespace lstmlm;
    capi::need(model, "model");
    capi::need(out, "out");
    *out = nullptr;
    if (prompt_len > 0) capi::need(prompt, "prompt");
    const lstmlm_search_options o = known_options(options);
    const Model& m = *model->model;
    tasks::GenerateOptions g;
    if (prompt_len > 0) g.prompt.assign(prompt, prompt_len);
    g.max_tokens = o.max_tokens;
    g.beam.beam_size = o.beam_size;
    g.beam.n_best = o.n_best;
    g.beam.length_penalty = o.length_penalty;
    g.beam.no_repeat_ngram = o.no_repeat_ngram;
    if (o.stop_at_eos == 0 || o.stop_at_eos == 1)
      g.stop_at_eos = o.stop_at_eos == 1;
    else if (o.stop_at_eos != -1)
      throw UsageError("options->stop_at_eos is " + std::to_string(o.stop_at_eos) + ": -1, 0 or 1");
    if (o.beam_size < 1 || o.beam_size > tasks::kMaxBeamSize)
      throw UsageError::option("beam_size", " must be in [1, " + std::to_string(tasks::kMaxBeamSize) +
                                                "], got " + std::to_string(o.beam_size));
    g.validate();
    if (o.n_bias > 0) {
      capi::need(o.bias_tokens, "options->bias_tokens");
      capi::need(o.bias_values, "options->bias_values");
      std::vector<std::pair<std::string, double>> pairs;
      for (size_t i = 0; i < o.n_bias; ++i) {
        capi::need(o.bias_tokens[i], ("options->bias_tokens[" + std::to_string(i) + "]").c_str());
        pairs.emplace_back(o.bias_tokens[i], static_cast<double>(o.bias_values[i]));
      }
      g.bias = std::make_shared<tasks::LogitBias>(tasks::LogitBias::from_pairs(m, pairs));
    }
    tasks::ConstraintSpec spec;
    if (o.n_allowed_words > 0 || o.allowed_words) {
      if (o.n_allowed_words > 0) capi::need(o.allowed_words, "options->allowed_words");
      std::vector<std::string> words;
      for (size_t i = 0; i < o.n_allowed_words; ++i) {
        capi::need(o.allowed_words[i], ("options->allowed_words[" + std::to_string(i) + "]").c_str());
        words.emplace_back(o.allowed_words[i]);
      }
      spec.allowed = tasks::Constraint::allowed_ids(m, words, "options->allowed_words");
    }
    if (o.regex) spec.regex = o.regex;
    if (spec.allowed || !spec.regex.empty())
      g.constraint = tasks::Constraint::create(m, spec, g.end_token(m));
    tasks::BeamResult r;
    {
      auto engine = model->pool->acquire();
      r = tasks::beam_search(*engine, g);
    }
    auto h = std::make_unique<lstmlm_hypotheses>();
    for (const auto& hyp : r.hypotheses) {
      lstmlm_hypotheses::One one;
      one.ids = hyp.ids();
      one.text = m.tokenizer().detokenize(one.ids);
      for (const auto& t : hyp.tokens) one.logprobs.push_back(t.logprob);
      one.logprob = hyp.total_logprob;
      one.score = hyp.score;
      h->list.push_back(std::move(one));
    }
    *out = h.release();
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_hypotheses_count(const lstmlm_hypotheses* h, size_t* out) {
  return lstmlm::capi::guarded("lstmlm_hypotheses_count", [&] {
    lstmlm::capi::need(h, "h");
    lstmlm::capi::need(out, "out");
    *out = h->list.size();
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_hypothesis(const lstmlm_hypotheses* h, size_t i, const char** text,
                                           const int32_t** ids, const float** logprobs, size_t* n_tokens,
                                           double* logprob, double* score) {
  return lstmlm::capi::guarded("lstmlm_hypothesis", [&] {
    lstmlm::capi::need(h, "h");
    if (i >= h->list.size())
      throw lstmlm::UsageError("i " + std::to_string(i) + " is not below the count " +
                               std::to_string(h->list.size()));
    const auto& one = h->list[i];
    if (text) *text = one.text.c_str();
    if (ids) *ids = one.ids.data();
    if (logprobs) *logprobs = one.logprobs.data();
    if (n_tokens) *n_tokens = one.ids.size();
    if (logprob) *logprob = one.logprob;
    if (score) *score = one.score;
    return LSTMLM_OK;
  });
}

LSTMLM_API void lstmlm_hypotheses_free(lstmlm_hypotheses* h) { delete h; }

}  // extern "C"
