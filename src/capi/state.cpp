// The C API: states, their bytes, the batched step and what a state's next distribution gives
// (include/lstmlm/lstmlm.h).
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "capi.hpp"
#include "lstmlm/tasks/predict.hpp"

namespace lstmlm::capi {

namespace {

lstmlm_state* new_state(const lstmlm_model& model, const State& state, const std::vector<float>& next,
                        int64_t fed) {
  auto s = std::make_unique<lstmlm_state>();
  s->model_id = model.id;
  s->fingerprint = model.model->fingerprint();
  s->state = state;
  s->next = next;
  s->fed = fed;
  return s.release();
}

void check_state(const lstmlm_model& model, const lstmlm_state* state, const std::string& name) {
  need(state, name.c_str());
  check_owner(model, *state, name);
}

}  // namespace

}  // namespace lstmlm::capi

using namespace lstmlm;
using capi::guarded;
using capi::need;

extern "C" {

LSTMLM_API lstmlm_status lstmlm_state_new(const lstmlm_model* model, int begin_of_sentence,
                                          lstmlm_state** out) {
  return guarded("lstmlm_state_new", [&] {
    need(model, "model");
    need(out, "out");
    *out = begin_of_sentence
               ? capi::new_state(*model, model->begin_state, model->begin_next, model->start >= 0 ? 1 : 0)
               : capi::new_state(*model, model->empty_state, model->empty_next, 0);
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_state_clone(const lstmlm_state* state, lstmlm_state** out) {
  return guarded("lstmlm_state_clone", [&] {
    need(state, "state");
    need(out, "out");
    *out = new lstmlm_state(*state);
    return LSTMLM_OK;
  });
}

LSTMLM_API void lstmlm_state_free(lstmlm_state* state) { delete state; }

LSTMLM_API lstmlm_status lstmlm_state_equal(const lstmlm_state* a, const lstmlm_state* b, int* equal) {
  return guarded("lstmlm_state_equal", [&] {
    need(a, "a");
    need(b, "b");
    need(equal, "equal");
    *equal = a->state == b->state ? 1 : 0;
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_state_serialize(const lstmlm_state* state, void* buf, size_t size,
                                                size_t* needed) {
  return guarded("lstmlm_state_serialize", [&] {
    need(state, "state");
    need(needed, "needed");
    if (size > 0) need(buf, "buf");
    const std::string bytes = tasks::stream_bytes(*state, state->fingerprint);
    *needed = bytes.size();
    if (size >= bytes.size()) std::memcpy(buf, bytes.data(), bytes.size());
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_state_deserialize(const lstmlm_model* model, const void* data, size_t size,
                                                  lstmlm_state** out) {
  return guarded("lstmlm_state_deserialize", [&] {
    need(model, "model");
    need(out, "out");
    if (size > 0) need(data, "data");
    auto s = std::make_unique<lstmlm_state>();
    static_cast<tasks::Stream&>(*s) =
        tasks::stream_from_bytes(*model->model, std::string_view(static_cast<const char*>(data), size));
    if (s->next.empty()) {  // a stream whose distribution was not computed: a C API state always has one
      std::vector<State> st{s->state};
      MatrixRM lp;
      model->pool->acquire()->predict({{}}, st, lp);
      s->next.assign(lp.data(), lp.data() + lp.cols());
    }
    s->model_id = model->id;
    s->fingerprint = model->model->fingerprint();
    *out = s.release();
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_step_batch(const lstmlm_model* model, lstmlm_state* const states[],
                                           const int32_t tokens[], size_t n, float* logprobs_out) {
  return guarded("lstmlm_step_batch", [&] {
    need(model, "model");
    if (n == 0) return LSTMLM_OK;
    if (n > capi::kMaxCount)
      throw UsageError("n is " + std::to_string(n) + ", more than LSTMLM_MAX_BATCH (" +
                       std::to_string(capi::kMaxCount) + ")");
    need(states, "states");
    need(tokens, "tokens");
    // Every argument is checked before any state changes.
    for (size_t i = 0; i < n; ++i) {
      const std::string name = "states[" + std::to_string(i) + "]";
      capi::check_state(*model, states[i], name);
    }
    for (size_t i = 0; i < n; ++i) capi::check_token(*model, tokens[i], "tokens[" + std::to_string(i) + "]");
    std::vector<std::pair<const lstmlm_state*, size_t>> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = {states[i], i};
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return std::less<const lstmlm_state*>()(a.first, b.first);  // a total order on unrelated pointers
    });
    for (size_t i = 1; i < n; ++i)
      if (order[i].first == order[i - 1].first)
        throw UsageError("states[" + std::to_string(order[i - 1].second) + "] and states[" +
                         std::to_string(order[i].second) + "] are the same state (each state once per call)");

    // One engine call on n rows of one token each: row i's results are what a lone step gives (the
    // engine is batch-invariant); the states change only once it has run.
    Sequences inputs(n);
    std::vector<tasks::Stream*> streams(n);
    for (size_t i = 0; i < n; ++i) {
      inputs[i] = {tokens[i]};
      streams[i] = states[i];
    }
    {
      auto engine = model->pool->acquire();
      tasks::advance(*engine, streams, inputs);
    }
    const auto V = static_cast<size_t>(model->model->vocab_size());
    if (logprobs_out != nullptr)
      for (size_t i = 0; i < n; ++i)
        std::copy(states[i]->next.begin(), states[i]->next.end(), logprobs_out + i * V);
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_state_logprob(const lstmlm_model* model, const lstmlm_state* state,
                                              int32_t token, float* out) {
  return guarded("lstmlm_state_logprob", [&] {
    need(model, "model");
    capi::check_state(*model, state, "state");
    need(out, "out");
    capi::check_token(*model, token, "token");
    *out = state->next[static_cast<size_t>(token)];
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_state_logprobs(const lstmlm_model* model, const lstmlm_state* state,
                                               float* out, size_t capacity) {
  return guarded("lstmlm_state_logprobs", [&] {
    need(model, "model");
    capi::check_state(*model, state, "state");
    need(out, "out");
    if (capacity < state->next.size())
      throw UsageError("capacity is " + std::to_string(capacity) + ", less than the vocabulary's " +
                       std::to_string(state->next.size()) + " floats");
    std::copy(state->next.begin(), state->next.end(), out);
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_state_top(const lstmlm_model* model, const lstmlm_state* state, size_t k,
                                          int32_t* ids, float* logprobs, size_t* n_out) {
  return guarded("lstmlm_state_top", [&] {
    need(model, "model");
    capi::check_state(*model, state, "state");
    need(n_out, "n_out");
    const auto V = static_cast<size_t>(model->model->vocab_size());
    const size_t n = std::min(k, V);
    if (n > 0) need(ids, "ids");
    if (n > 0) {
      // predict's own ranking (ties by ascending id): the CLI's candidates.
      const auto top = tasks::top_candidates(*model->model, state->next.data(), static_cast<int>(n));
      for (size_t i = 0; i < n; ++i) {
        ids[i] = top[i].id;
        if (logprobs != nullptr) logprobs[i] = top[i].logprob;
      }
    }
    *n_out = n;
    return LSTMLM_OK;
  });
}

}  // extern "C"
