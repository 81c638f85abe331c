// The C API's mixing functions (include/lstmlm/lstmlm.h): ARPA n-gram models mixed into a word model's
// distributions, on tasks/mix.hpp (the mixture `lstmlm predict --mix` uses).
#include "lstmlm/tasks/mix.hpp"

#include <memory>
#include <string>
#include <vector>

#include "capi.hpp"
#include "lstmlm/tasks/request.hpp"

// A mixture with the model it was made for: token ids of one vocabulary.
struct lstmlm_mix {
  uint64_t model_id = 0;
  std::shared_ptr<const lstmlm::tasks::MixRow> row;
};

extern "C" {

LSTMLM_API lstmlm_status lstmlm_mix_load(const lstmlm_model* model, const char* const specs[], size_t n,
                                         const char* mode, lstmlm_mix** out) {
  return lstmlm::capi::guarded("lstmlm_mix_load", [&] {
    lstmlm::capi::need(model, "model");
    lstmlm::capi::need(out, "out");
    *out = nullptr;
    if (n == 0) throw lstmlm::UsageError("n is 0: give at least one \"PATH:WEIGHT\" spec");
    lstmlm::capi::need(specs, "specs");
    if (n > 1024) throw lstmlm::UsageError("n " + std::to_string(n) + " is over 1024 models");
    std::vector<std::string> list;
    for (size_t i = 0; i < n; ++i) {
      lstmlm::capi::need(specs[i], ("specs[" + std::to_string(i) + "]").c_str());
      list.emplace_back(specs[i]);
    }
    const lstmlm::Model& m = *model->model;
    auto mix = std::make_unique<lstmlm_mix>();
    mix->model_id = model->id;
    mix->row = std::make_shared<const lstmlm::tasks::MixRow>(
        lstmlm::tasks::load_mix(list, lstmlm::tasks::NgramMix::words_of(m), false,
                                lstmlm::tasks::mix_mode_choices().parse(mode ? mode : "linear")),
        m);
    *out = mix.release();
    return LSTMLM_OK;
  });
}

LSTMLM_API void lstmlm_mix_free(lstmlm_mix* mix) { delete mix; }

LSTMLM_API lstmlm_status lstmlm_mix_logprobs(const lstmlm_mix* mix, const lstmlm_state* state,
                                             const int32_t* history, size_t n_history, int begin_of_sentence,
                                             float* out, size_t capacity) {
  return lstmlm::capi::guarded("lstmlm_mix_logprobs", [&] {
    lstmlm::capi::need(mix, "mix");
    lstmlm::capi::need(state, "state");
    lstmlm::capi::need(out, "out");
    if (state->model_id != mix->model_id)
      throw lstmlm::UsageError("state: a state of another model than the mixture's (its token ids differ)");
    if (n_history > 0) lstmlm::capi::need(history, "history");
    if (n_history > lstmlm::capi::kMaxCount)
      throw lstmlm::UsageError("n_history " + std::to_string(n_history) + " is over " +
                               std::to_string(lstmlm::capi::kMaxCount));
    const auto V = static_cast<size_t>(mix->row->vocab_size());
    if (state->next.size() != V)
      throw lstmlm::UsageError("state: its next distribution is not computed (feed it a token first)");
    if (capacity < V)
      throw lstmlm::UsageError("capacity is " + std::to_string(capacity) + ", less than the vocabulary's " +
                               std::to_string(V) + " floats");
    // The history as the mixture reads it: the start token first when the state began with it.
    std::vector<int32_t> fed;
    const bool from_start = begin_of_sentence != 0 && mix->row->start() >= 0;
    if (from_start) fed.push_back(mix->row->start());
    for (size_t i = 0; i < n_history; ++i) {
      if (history[i] < 0 || static_cast<size_t>(history[i]) >= V)
        throw lstmlm::InputError("history[" + std::to_string(i) + "]: token " + std::to_string(history[i]) +
                                 " is outside [0, " + std::to_string(V) + ")");
      fed.push_back(history[i]);
    }
    std::copy(state->next.begin(), state->next.end(), out);
    mix->row->apply(fed, from_start, out);
    return LSTMLM_OK;
  });
}

}  // extern "C"
