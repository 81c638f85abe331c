// What the C API's functions share (include/lstmlm/lstmlm.h, docs/c-api.md): the two handles and the guard
// that turns every C++ exception into a status and a thread-local message, so nothing is thrown across the
// ABI.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/engine_pool.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/lstmlm.h"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/stream.hpp"
#include "lstmlm/tasks/window.hpp"

// A loaded model: the library's Model, the engines that concurrent calls lease, and the two states every
// new state copies (computed once at load, by the same engine call a step makes).
struct lstmlm_model {
  uint64_t id = 0;  // unique in the process: a state keeps it, so a state of another model is found
  std::shared_ptr<const lstmlm::Model> model;
  std::unique_ptr<lstmlm::EnginePool> pool;  // its own lock: shared by every thread calling on the model
  std::string kernels;
  int32_t start = -1, eos = -1, unk = -1;
  lstmlm::State begin_state, empty_state;
  std::vector<float> begin_next, empty_next;
  // A Pad-window model's states after j pads, shared by its predict calls (null without such a window).
  std::shared_ptr<lstmlm::tasks::PadStates> pad_states;
};

// One sequence's state and the ln p of each of its V next tokens.
// A stream of the library (lstmlm/tasks/stream.hpp): its bytes are the server's and the Python module's.
struct lstmlm_state : lstmlm::tasks::Stream {
  uint64_t model_id = 0;     // the lstmlm_model::id of the model that made it
  uint64_t fingerprint = 0;  // that model's Model::fingerprint(), written into the serialized bytes
};

namespace lstmlm::capi {

// At most this many states per lstmlm_step_batch, ids per lstmlm_detokenize (LSTMLM_MAX_BATCH).
inline constexpr size_t kMaxCount = size_t{1} << 24;

// Records `message` as this thread's last error, prefixed with the function's name; returns `status`.
lstmlm_status fail(lstmlm_status status, const char* function, std::string_view message) noexcept;
// Clears this thread's last error.
void succeed() noexcept;

// Runs `body` (which returns a status or throws) and turns whatever it throws into a status and message:
// ModelError -> MODEL, InputError -> INPUT, UsageError -> USAGE, bad_alloc -> NOMEM, anything else ->
// INTERNAL. Never throws.
template <class Body>
lstmlm_status guarded(const char* function, Body&& body) noexcept {
  try {
    const lstmlm_status s = body();
    if (s == LSTMLM_OK) succeed();
    return s;
  } catch (const ModelError& e) {
    return fail(LSTMLM_ERR_MODEL, function, e.what());
  } catch (const InputError& e) {
    return fail(LSTMLM_ERR_INPUT, function, e.message());
  } catch (const UsageError& e) {
    // An option's key as the C API's argument names spell it ("prefix", "top_k").
    return fail(LSTMLM_ERR_USAGE, function, e.spelled([](const std::string& key) { return key; }));
  } catch (const std::bad_alloc&) {
    return fail(LSTMLM_ERR_NOMEM, function, "out of memory");
  } catch (const std::exception& e) {
    return fail(LSTMLM_ERR_INTERNAL, function, e.what());
  } catch (...) {
    return fail(LSTMLM_ERR_INTERNAL, function, "an unknown exception");
  }
}

// UsageError "`name` is NULL" when p is.
inline void need(const void* p, const char* name) {
  if (p == nullptr) throw UsageError(std::string(name) + " is NULL");
}

// UsageError unless `state` is a state of `model` (`name` says which argument it is).
void check_owner(const lstmlm_model& model, const lstmlm_state& state, const std::string& name);
// InputError unless `id` is a token id of the model (`name` says which argument it is).
void check_token(const lstmlm_model& model, int64_t id, const std::string& name);

}  // namespace lstmlm::capi
