// The C API: states, their bytes, the batched step and what a state's next distribution gives
// (include/lstmlm/lstmlm.h).
#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "capi.hpp"
#include "lstmlm/tasks/predict.hpp"

namespace lstmlm::capi {

namespace {

static_assert(std::endian::native == std::endian::little,
              "the serialized state is little-endian, written as this CPU stores it");
static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559);

// The serialized state (lstmlm.h): magic, version, L, V, L pairs of widths, then the floats.
constexpr char kMagic[8] = {'L', 'S', 'T', 'M', 'L', 'M', 'S', 'T'};
constexpr uint32_t kFormat = 1;  // the Python module's pickle format number: the same content
constexpr size_t kHeader = sizeof(kMagic) + 3 * sizeof(uint32_t);

lstmlm_state* new_state(const lstmlm_model& model, const State& state, const std::vector<float>& next) {
  auto s = std::make_unique<lstmlm_state>();
  s->model_id = model.id;
  s->state = state;
  s->next = next;
  return s.release();
}

void check_state(const lstmlm_model& model, const lstmlm_state* state, const std::string& name) {
  need(state, name.c_str());
  check_owner(model, *state, name);
}

size_t serialized_size(const lstmlm_state& s) {
  size_t floats = s.next.size();
  for (size_t l = 0; l < s.state.h.size(); ++l) floats += s.state.h[l].size() + s.state.c[l].size();
  return kHeader + s.state.h.size() * 2 * sizeof(uint32_t) + floats * sizeof(float);
}

class Writer {
 public:
  explicit Writer(unsigned char* p) : p_(p) {}
  void bytes(const void* data, size_t n) {
    if (n > 0) std::memcpy(p_, data, n);
    p_ += n;
  }
  void u32(size_t v) {
    const auto x = static_cast<uint32_t>(v);
    bytes(&x, sizeof x);
  }
  void floats(const std::vector<float>& v) { bytes(v.data(), v.size() * sizeof(float)); }

 private:
  unsigned char* p_;
};

// Reads the serialized bytes with every length checked against what is left: a short buffer is an
// InputError saying how many bytes were missing.
class Reader {
 public:
  Reader(const unsigned char* p, size_t size) : p_(p), left_(size), size_(size) {}
  void bytes(void* out, size_t n, const char* what) {
    if (n > left_)
      throw InputError("the bytes are truncated: " + std::to_string(size_) + " bytes end inside " + what);
    if (n > 0) std::memcpy(out, p_, n);
    p_ += n;
    left_ -= n;
  }
  uint32_t u32(const char* what) {
    uint32_t x = 0;
    bytes(&x, sizeof x, what);
    return x;
  }
  std::vector<float> floats(uint32_t n, const char* what) {
    if (size_t{n} * sizeof(float) > left_)
      throw InputError("the bytes are truncated: " + std::to_string(size_) + " bytes end inside " + what);
    std::vector<float> v(n);
    if (n > 0) bytes(v.data(), v.size() * sizeof(float), what);  // a GRU's c is empty: no null memcpy
    return v;
  }
  size_t left() const { return left_; }

 private:
  const unsigned char* p_;
  size_t left_, size_;
};

void check_width(uint32_t got, size_t want, size_t layer, const char* what) {
  if (got != want)
    throw InputError("a state of another shape: layer " + std::to_string(layer) + "'s " + what + " has " +
                     std::to_string(got) + " floats, this model's " + std::to_string(want));
}

lstmlm_state* deserialize(const lstmlm_model& model, const unsigned char* data, size_t size) {
  Reader r(data, size);
  char magic[sizeof kMagic];
  r.bytes(magic, sizeof magic, "the magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw InputError("not a serialized lstmlm state (the first 8 bytes are not \"LSTMLMST\")");
  const uint32_t version = r.u32("the format version");
  if (version != kFormat)
    throw InputError("a state of format version " + std::to_string(version) + ", this library reads " +
                     std::to_string(kFormat));
  const uint32_t layers = r.u32("the layer count");
  const uint32_t vocab = r.u32("the vocabulary size");
  const State zeros = State::zeros(*model.model);
  if (layers != zeros.h.size())
    throw InputError("a state of another shape: L = " + std::to_string(layers) + ", this model has " +
                     std::to_string(zeros.h.size()) + " layers");
  if (vocab != static_cast<uint32_t>(model.model->vocab_size()))
    throw InputError("a state of another shape: a next distribution over " + std::to_string(vocab) +
                     " tokens, this model's vocabulary has " + std::to_string(model.model->vocab_size()));
  std::vector<std::pair<uint32_t, uint32_t>> widths(layers);
  for (uint32_t l = 0; l < layers; ++l) {
    widths[l].first = r.u32("the layer widths");
    widths[l].second = r.u32("the layer widths");
    check_width(widths[l].first, zeros.h[l].size(), l, "h");
    check_width(widths[l].second, zeros.c[l].size(), l, "c");
  }
  auto s = std::make_unique<lstmlm_state>();
  s->model_id = model.id;
  for (uint32_t l = 0; l < layers; ++l) s->state.h.push_back(r.floats(widths[l].first, "an h vector"));
  for (uint32_t l = 0; l < layers; ++l) s->state.c.push_back(r.floats(widths[l].second, "a c vector"));
  s->next = r.floats(vocab, "the next distribution");
  if (r.left() != 0)
    throw InputError(std::to_string(size) + " bytes, the state ends after " +
                     std::to_string(size - r.left()) + " (bytes left over)");
  return s.release();
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
    *out = begin_of_sentence ? capi::new_state(*model, model->begin_state, model->begin_next)
                             : capi::new_state(*model, model->empty_state, model->empty_next);
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
    const size_t n = capi::serialized_size(*state);
    *needed = n;
    if (size < n) return LSTMLM_OK;
    capi::Writer w(static_cast<unsigned char*>(buf));
    w.bytes(capi::kMagic, sizeof capi::kMagic);
    w.u32(capi::kFormat);
    w.u32(state->state.h.size());
    w.u32(state->next.size());
    for (size_t l = 0; l < state->state.h.size(); ++l) {
      w.u32(state->state.h[l].size());
      w.u32(state->state.c[l].size());
    }
    for (const auto& h : state->state.h) w.floats(h);
    for (const auto& c : state->state.c) w.floats(c);
    w.floats(state->next);
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_state_deserialize(const lstmlm_model* model, const void* data, size_t size,
                                                  lstmlm_state** out) {
  return guarded("lstmlm_state_deserialize", [&] {
    need(model, "model");
    need(out, "out");
    if (size > 0) need(data, "data");
    *out = capi::deserialize(*model, static_cast<const unsigned char*>(data), size);
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
    // engine is batch-invariant). The states are copied in, so a failure leaves them as they were.
    Sequences inputs(n);
    std::vector<State> rows(n);
    for (size_t i = 0; i < n; ++i) {
      inputs[i] = {tokens[i]};
      rows[i] = states[i]->state;
    }
    std::vector<MatrixRM> out;
    {
      auto engine = model->pool->acquire();
      engine->logprobs(inputs, rows, out);
    }
    const auto V = static_cast<size_t>(model->model->vocab_size());
    for (size_t i = 0; i < n; ++i) {
      lstmlm_state& s = *states[i];
      s.state.h.swap(rows[i].h);
      s.state.c.swap(rows[i].c);
      std::copy(out[i].data(), out[i].data() + V, s.next.data());
      if (logprobs_out != nullptr) std::copy(out[i].data(), out[i].data() + V, logprobs_out + i * V);
    }
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
