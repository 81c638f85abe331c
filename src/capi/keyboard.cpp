// The C API's keyboard functions (include/lstmlm/lstmlm.h): boosts, and completion from a state's kept
// distribution, on tasks/keyboard.hpp.
#include "lstmlm/tasks/keyboard.hpp"

#include <algorithm>
#include <climits>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "capi.hpp"

// Boosts with the model they were read for: token ids of one vocabulary.
struct lstmlm_boost {
  uint64_t model_id = 0;
  lstmlm::tasks::Boost boost;
};

namespace {

using namespace lstmlm;

lstmlm_status make_boost(const char* function, const lstmlm_model* model, lstmlm_boost** out,
                         const std::function<tasks::Boost()>& read) {
  return capi::guarded(function, [&] {
    capi::need(model, "model");
    capi::need(out, "out");
    *out = nullptr;
    auto b = std::make_unique<lstmlm_boost>();
    b->model_id = model->id;
    b->boost = read();
    *out = b.release();
    return LSTMLM_OK;
  });
}

// The completion index of a model, built by the first call and kept with the model.
std::shared_ptr<const tasks::Completer> completer_of(const lstmlm_model& model) {
  return tasks::Completer::of(*model.model);
}

}  // namespace

extern "C" {

LSTMLM_API lstmlm_status lstmlm_boost_load(const lstmlm_model* model, const char* path, lstmlm_boost** out) {
  return make_boost("lstmlm_boost_load", model, out, [&] {
    capi::need(path, "path");
    return tasks::Boost::load(*model->model, path);
  });
}

LSTMLM_API lstmlm_status lstmlm_boost_parse(const lstmlm_model* model, const char* text, size_t text_len,
                                            lstmlm_boost** out) {
  return make_boost("lstmlm_boost_parse", model, out, [&] {
    if (text_len > 0) capi::need(text, "text");
    std::vector<std::string> lines;
    std::string_view all(text == nullptr ? "" : text, text_len);
    for (size_t b = 0; b <= all.size();) {
      const size_t e = all.find('\n', b);
      lines.emplace_back(all.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
      if (e == std::string_view::npos) break;
      b = e + 1;
    }
    return tasks::Boost::parse(*model->model, lines, "<boost>");
  });
}

LSTMLM_API void lstmlm_boost_free(lstmlm_boost* boost) { delete boost; }

LSTMLM_API lstmlm_status lstmlm_boost_size(const lstmlm_boost* boost, size_t* out) {
  return capi::guarded("lstmlm_boost_size", [&] {
    capi::need(boost, "boost");
    capi::need(out, "out");
    *out = boost->boost.size();
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_state_complete(const lstmlm_model* model, const lstmlm_state* state,
                                               const char* prefix, size_t prefix_len,
                                               const lstmlm_boost* boost, const int32_t* history,
                                               size_t n_history, size_t k, int32_t* ids, float* logprobs,
                                               size_t* n_out) {
  return capi::guarded("lstmlm_state_complete", [&] {
    capi::need(model, "model");
    capi::need(state, "state");
    capi::check_owner(*model, *state, "state");
    capi::need(n_out, "n_out");
    *n_out = 0;
    if (prefix_len > 0) capi::need(prefix, "prefix");
    if (n_history > 0) capi::need(history, "history");
    if (n_history > capi::kMaxCount)
      throw UsageError("n_history " + std::to_string(n_history) + " is over " +
                       std::to_string(capi::kMaxCount));
    if (k > 0) capi::need(ids, "ids");
    const Completion how = model->model->tokenizer().traits().completion;
    if (how == Completion::CharBeam)
      throw UsageError(
          "a character model's completions are strings, not token ids: use `lstmlm predict --prefix` "
          "or the Python module's Model.complete");
    if (boost != nullptr && boost->model_id != model->id)
      throw UsageError("boost was loaded for another model (its token ids differ)");
    for (size_t i = 0; i < n_history; ++i)
      capi::check_token(*model, history[i], "history[" + std::to_string(i) + "]");
    const auto completer = completer_of(*model);
    const std::string_view typed(prefix == nullptr ? "" : prefix, prefix_len);
    tasks::check_completion(*model->model, Completion::WordIndex, typed);
    std::vector<tasks::Candidate> top;
    if (k == 0) {
      // nothing asked
    } else if (boost != nullptr && boost->boost.size() > 0) {
      std::vector<float> row = state->next;
      boost->boost.apply(std::span<const int32_t>(history, n_history), row.data(),
                         model->model->vocab_size());
      top = completer->complete(row.data(), typed, static_cast<int>(std::min<size_t>(k, INT32_MAX)));
    } else {
      top = completer->complete(state->next.data(), typed, static_cast<int>(std::min<size_t>(k, INT32_MAX)));
    }
    for (size_t i = 0; i < top.size(); ++i) {
      ids[i] = top[i].id;
      if (logprobs != nullptr) logprobs[i] = top[i].logprob;
    }
    *n_out = top.size();
    return LSTMLM_OK;
  });
}

}  // extern "C"
