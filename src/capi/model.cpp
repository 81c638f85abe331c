// The C API: versions, errors, models and text (include/lstmlm/lstmlm.h).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "capi.hpp"
#include "lstmlm/precision.hpp"
#include "lstmlm/tasks/input.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/text.hpp"

#ifndef LSTMLM_VERSION
#error "LSTMLM_VERSION must be defined by the build (CMakeLists.txt)"
#endif

namespace lstmlm::capi {

namespace {

// This thread's last error: the message and what lstmlm_last_error returns (a fixed text when even the
// message could not be allocated).
thread_local std::string t_error;
thread_local const char* t_error_text = "";

std::atomic<uint64_t> g_next_model_id{1};

static_assert(int(EmbeddingFold::Auto) == LSTMLM_FOLD_AUTO &&
              int(EmbeddingFold::Always) == LSTMLM_FOLD_ALWAYS &&
              int(EmbeddingFold::Never) == LSTMLM_FOLD_NEVER);

// The options as this library knows them, from a caller's struct of `struct_size` bytes.
EngineOptions engine_options(const lstmlm_model_options* o) {
  EngineOptions e;
  if (o == nullptr) return e;
  constexpr size_t known = sizeof(lstmlm_model_options);
  const size_t v1 = offsetof(lstmlm_model_options, precision) + sizeof(o->precision);
  if (o->struct_size < v1)
    throw UsageError("options->struct_size is " + std::to_string(o->struct_size) + ", less than the " +
                     std::to_string(v1) + " bytes of the first version (use LSTMLM_MODEL_OPTIONS_INIT)");
  if (o->struct_size > known) {
    // A caller built against a later header: the fields this library does not know must be left zero.
    const auto* extra = reinterpret_cast<const unsigned char*>(o) + known;
    if (std::any_of(extra, extra + (o->struct_size - known), [](unsigned char b) { return b != 0; }))
      throw UsageError("options set fields this library version (" LSTMLM_VERSION ") does not know");
  }
  if (o->threads > kMaxThreads)
    throw UsageError("options->threads is " + std::to_string(o->threads) + ", more than " +
                     std::to_string(kMaxThreads));
  e.threads = o->threads;
  switch (o->precision) {
    case LSTMLM_PRECISION_FP32:
      e.precision = Precision::Fp32;
      break;
    case LSTMLM_PRECISION_BF16:
      e.precision = Precision::Bf16;
      break;
    case LSTMLM_PRECISION_INT8:
      e.precision = Precision::Int8;
      break;
    default:
      throw UsageError("options->precision is " + std::to_string(o->precision) +
                       ", not an lstmlm_precision (LSTMLM_PRECISION_FP32, _BF16 or _INT8)");
  }
  const size_t v2 = offsetof(lstmlm_model_options, fold_embedding) + sizeof(o->fold_embedding);
  if (o->struct_size >= v2) {
    if (o->fold_embedding < LSTMLM_FOLD_AUTO || o->fold_embedding > LSTMLM_FOLD_NEVER)
      throw UsageError("options->fold_embedding is " + std::to_string(o->fold_embedding) +
                       ", not an lstmlm_fold (LSTMLM_FOLD_AUTO, _ALWAYS or _NEVER)");
    e.fold = static_cast<EmbeddingFold>(o->fold_embedding);
  }
  return e;
}

// The state after feeding `token` (none: -1) to the zero state, and its next distribution: the engine call
// lstmlm_step_batch makes (a row of one token), or, without a token, predict's row with no input.
void first_state(Engine& engine, int32_t token, State& state, std::vector<float>& next) {
  std::vector<State> st{State::zeros(engine.model())};
  if (token >= 0) {
    std::vector<MatrixRM> out;
    engine.logprobs({{token}}, st, out);
    next.assign(out[0].data(), out[0].data() + out[0].cols());
  } else {
    MatrixRM out;
    engine.predict({{}}, st, out);
    next.assign(out.data(), out.data() + out.cols());
  }
  state = std::move(st[0]);
}

}  // namespace

lstmlm_status fail(lstmlm_status status, const char* function, std::string_view message) noexcept {
  try {
    t_error.assign(function);
    t_error += ": ";
    t_error += printable(message);  // one line: a model path's newline, escape or invalid UTF-8 as \xNN
    t_error_text = t_error.c_str();
  } catch (...) {
    t_error_text = "out of memory while recording an error";
  }
  return status;
}

void succeed() noexcept {
  t_error.clear();
  t_error_text = "";
}

void check_owner(const lstmlm_model& model, const lstmlm_state& state, const std::string& name) {
  if (state.model_id != model.id)
    throw UsageError(name +
                     " is a state of another model (a state belongs to the lstmlm_model that made it; "
                     "serialize it and deserialize it into this one)");
}

void check_token(const lstmlm_model& model, int64_t id, const std::string& name) {
  if (id < 0 || id >= model.model->vocab_size())
    throw InputError(name + " is " + std::to_string(id) + ", not a token id (the vocabulary has " +
                     std::to_string(model.model->vocab_size()) + ")");
}

}  // namespace lstmlm::capi

using namespace lstmlm;
using capi::guarded;
using capi::need;

extern "C" {

LSTMLM_API const char* lstmlm_version(void) { return LSTMLM_VERSION; }

LSTMLM_API int lstmlm_abi_version(void) { return LSTMLM_ABI_VERSION; }

LSTMLM_API const char* lstmlm_last_error(void) { return capi::t_error_text; }

LSTMLM_API const char* lstmlm_status_name(int status) {
  switch (status) {
    case LSTMLM_OK:
      return "LSTMLM_OK";
    case LSTMLM_ERR_USAGE:
      return "LSTMLM_ERR_USAGE";
    case LSTMLM_ERR_INPUT:
      return "LSTMLM_ERR_INPUT";
    case LSTMLM_ERR_MODEL:
      return "LSTMLM_ERR_MODEL";
    case LSTMLM_ERR_NOMEM:
      return "LSTMLM_ERR_NOMEM";
    case LSTMLM_ERR_INTERNAL:
      return "LSTMLM_ERR_INTERNAL";
  }
  return "LSTMLM_ERR_UNKNOWN";
}

LSTMLM_API lstmlm_status lstmlm_model_load(const char* path, const lstmlm_model_options* options,
                                           lstmlm_model** out) {
  return guarded("lstmlm_model_load", [&] {
    need(out, "out");
    need(path, "path");
    const EngineOptions eo = capi::engine_options(options);
    auto m = std::make_unique<lstmlm_model>();
    m->model = Model::load(path);
    // The Python module's budget: two engine threads per core, at least two engines.
    const int cores = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxThreads);
    // The precision is fixed for the handle's life: the weights are held once, packed.
    keep_only_packed(m->model, eo.precision, eo.fold);
    m->pool = std::make_unique<EnginePool>(m->model, eo, 2 * cores);
    m->kernels = std::string(m->pool->first().kernels());
    const Tokenizer& tok = m->model->tokenizer();
    m->start = tasks::start_token(tok);
    m->eos = tok.eos_id().value_or(-1);
    m->unk = tok.unk_id().value_or(-1);
    {
      auto engine = m->pool->acquire();
      capi::first_state(*engine, m->start, m->begin_state, m->begin_next);
      capi::first_state(*engine, -1, m->empty_state, m->empty_next);
    }
    const tasks::WindowOptions window = tasks::default_window(*m->model, std::nullopt);
    if (window.mode == tasks::WindowMode::Pad)
      m->pad_states = std::make_shared<tasks::PadStates>(*m->model, window.length);
    m->id = capi::g_next_model_id.fetch_add(1);
    *out = m.release();
    return LSTMLM_OK;
  });
}

LSTMLM_API void lstmlm_model_free(lstmlm_model* model) { delete model; }

LSTMLM_API lstmlm_status lstmlm_model_vocab_size(const lstmlm_model* model, int32_t* out) {
  return guarded("lstmlm_model_vocab_size", [&] {
    need(model, "model");
    need(out, "out");
    *out = model->model->vocab_size();
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_model_token(const lstmlm_model* model, int32_t id, const char** text,
                                            size_t* len) {
  return guarded("lstmlm_model_token", [&] {
    need(model, "model");
    need(text, "text");
    capi::check_token(*model, id, "id");
    const std::string& t = model->model->vocab().token(id);
    *text = t.c_str();
    if (len != nullptr) *len = t.size();
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_model_token_id(const lstmlm_model* model, const char* token, int32_t* id) {
  return guarded("lstmlm_model_token_id", [&] {
    need(model, "model");
    need(token, "token");
    need(id, "id");
    *id = model->model->vocab().find(token).value_or(-1);
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_model_special_tokens(const lstmlm_model* model, int32_t* start, int32_t* eos,
                                                     int32_t* unk) {
  return guarded("lstmlm_model_special_tokens", [&] {
    need(model, "model");
    if (start != nullptr) *start = model->start;
    if (eos != nullptr) *eos = model->eos;
    if (unk != nullptr) *unk = model->unk;
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_model_kernels(const lstmlm_model* model, const char** out) {
  return guarded("lstmlm_model_kernels", [&] {
    need(model, "model");
    need(out, "out");
    *out = model->kernels.c_str();
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_tokenize(const lstmlm_model* model, const char* text, size_t text_len,
                                         int32_t* ids, size_t capacity, size_t* needed) {
  return guarded("lstmlm_tokenize", [&] {
    need(model, "model");
    need(needed, "needed");
    if (text_len > 0) need(text, "text");
    if (capacity > 0) need(ids, "ids");
    // The tokenizer's own limit on a line (score's), so a huge text fails before its tokens fill memory.
    const auto tokens = model->model->tokenizer().tokenize(std::string_view(text_len ? text : "", text_len),
                                                           tasks::kMaxLineTokens);
    const size_t n = static_cast<size_t>(
        std::count_if(tokens.begin(), tokens.end(), [](const Token& t) { return t.id >= 0; }));
    *needed = n;
    if (n <= capacity) {
      size_t i = 0;
      for (const auto& t : tokens)
        if (t.id >= 0) ids[i++] = t.id;
    }
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_detokenize(const lstmlm_model* model, const int32_t* ids, size_t n, char* buf,
                                           size_t size, size_t* needed) {
  return guarded("lstmlm_detokenize", [&] {
    need(model, "model");
    need(needed, "needed");
    if (n > capi::kMaxCount)
      throw UsageError("n is " + std::to_string(n) + ", more than LSTMLM_MAX_BATCH (" +
                       std::to_string(capi::kMaxCount) + ")");
    if (n > 0) need(ids, "ids");
    if (size > 0) need(buf, "buf");
    for (size_t i = 0; i < n; ++i) capi::check_token(*model, ids[i], "ids[" + std::to_string(i) + "]");
    const std::string text = model->model->tokenizer().detokenize({ids, n});
    *needed = text.size() + 1;
    if (size >= text.size() + 1) {
      std::memcpy(buf, text.data(), text.size());
      buf[text.size()] = '\0';
    } else if (size > 0) {
      buf[0] = '\0';
    }
    return LSTMLM_OK;
  });
}

}  // extern "C"
