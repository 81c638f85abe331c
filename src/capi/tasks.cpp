// The C API's tasks as JSON lines (include/lstmlm/lstmlm.h): score, predict and generate run by the library's
// tasks and written by its jsonl writer, so a binding (the WebAssembly module's JavaScript API) gets the
// CLI's records, numbers and defaults without a task of its own.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "capi.hpp"
#include "lstmlm/report/generate.hpp"
#include "lstmlm/report/predict.hpp"
#include "lstmlm/report/record.hpp"
#include "lstmlm/report/score.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::capi {

namespace {

// The bytes of `records` in jsonl, as a NUL-terminated string of malloc's (lstmlm_string_free).
void give(const std::vector<report::Record>& records, char** out, size_t* out_len) {
  const std::string text = report::render(report::Format::Jsonl, nullptr, records);
  char* s = static_cast<char*>(std::malloc(text.size() + 1));
  if (s == nullptr) throw std::bad_alloc();
  std::memcpy(s, text.c_str(), text.size() + 1);
  *out = s;
  if (out_len) *out_len = text.size();
}

std::string text_of(const char* p, size_t n, const char* name) {
  if (n > 0) need(p, name);
  return n == 0 ? std::string() : std::string(p, n);
}

// A caller's options struct of `size` bytes against the `known` bytes of this version: smaller is refused,
// larger only when the fields this version does not know are zero.
// `first`: the bytes of the struct's first version (default: `known`, a struct of one version).
void check_size(size_t size, size_t known, const void* o, const char* init, size_t first = 0) {
  if (first == 0) first = known;
  if (size < first)
    throw UsageError("options->struct_size is " + std::to_string(size) + ", less than the " +
                     std::to_string(first) + " bytes of the first version (use " + init + ")");
  if (size > known) {
    const auto* extra = static_cast<const unsigned char*>(o) + known;
    for (size_t i = 0; i < size - known; ++i)
      if (extra[i] != 0) throw UsageError("options set fields this library version does not know");
  }
}

// LSTMLM_GENERATE_OPTIONS_INIT spells the library's cache defaults in the C header: kept equal here.
constexpr lstmlm_generate_options kGenerateInit = LSTMLM_GENERATE_OPTIONS_INIT;
static_assert(kGenerateInit.cache_window == tasks::CacheOptions{}.window &&
              kGenerateInit.cache_lambda == tasks::CacheOptions{}.lambda &&
              kGenerateInit.cache_theta == tasks::CacheOptions{}.theta);

// The options as this library knows them, from a caller's struct of `struct_size` bytes.
tasks::GenerateOptions generate_options(const lstmlm_generate_options* o, const Model& model) {
  tasks::GenerateOptions g;
  g.window = tasks::default_window(model, std::nullopt);
  if (o == nullptr) return g;
  constexpr size_t v1 = offsetof(lstmlm_generate_options, seed) + sizeof(uint64_t);
  check_size(o->struct_size, sizeof(lstmlm_generate_options), o, "LSTMLM_GENERATE_OPTIONS_INIT", v1);
  g.max_tokens = o->max_tokens;
  g.num_samples = o->num_samples;
  g.sampler.temperature = o->temperature;
  g.sampler.top_k = o->top_k;
  g.sampler.top_p = o->top_p;
  g.seed = o->seed;
  if (o->struct_size >= offsetof(lstmlm_generate_options, cache_theta) + sizeof(double)) {
    g.cache.window = o->cache_window;
    g.cache.lambda = o->cache_lambda;
    g.cache.theta = o->cache_theta;
  }
  return g;
}

// The softmax word a caller gave (NULL: the default).
tasks::Softmax softmax_of(const char* word) {
  return word == nullptr ? tasks::softmax_choices().fallback() : tasks::softmax_choices().parse(word);
}

// predict's records of `contexts` (their source and first line as the CLI's for messages).
void predict_records(const lstmlm_model* model, const std::vector<std::string>& contexts, int32_t top,
                     const char* prefix, size_t prefix_len, const std::string& source, char** out,
                     size_t* out_len, const char* softmax = nullptr) {
  if (top < 0)
    throw UsageError::option("top", " must be >= 0 (0: the whole vocabulary), got " + std::to_string(top));
  tasks::PredictOptions opt;
  opt.top = top;
  opt.prefix = text_of(prefix, prefix_len, "prefix");
  opt.window = tasks::default_window(*model->model, std::nullopt);
  opt.pad_states = model->pad_states;
  opt.softmax = softmax_of(softmax);
  opt.validate();
  auto engine = model->pool->acquire();
  const auto preds = tasks::predict(*engine, contexts, opt, source, 1);
  const bool padded = opt.window.mode == tasks::WindowMode::Pad;
  std::vector<report::Record> records;
  records.reserve(preds.size());
  for (size_t i = 0; i < preds.size(); ++i)
    records.push_back(report::prediction_record(contexts[i], preds[i], padded));
  give(records, out, out_len);
}

lstmlm_status score_jsonl(const lstmlm_model* model, const char* text, size_t text_len,
                          const lstmlm_score_options* options, char** out, size_t* out_len) {
  need(model, "model");
  need(out, "out");
  *out = nullptr;
  const std::string input = text_of(text, text_len, "text");
  std::vector<std::string> lines;
  std::vector<tasks::LineEnd> ends;
  tasks::split_lines(input, lines, ends);
  tasks::ScoreOptions task;
  task.window = tasks::default_window(*model->model, std::nullopt);
  if (options != nullptr) {
    check_size(options->struct_size, sizeof(lstmlm_score_options), options, "LSTMLM_SCORE_OPTIONS_INIT");
    task.softmax = softmax_of(options->softmax);
    task.reverse = options->reverse != 0;
  }
  task.validate();
  auto engine = model->pool->acquire();
  tasks::Scorer scorer(*engine, task);
  const auto scores = scorer.score(lines, "-", 1, ends);
  report::ScoreView view;
  view.verbosity = report::Verbosity::Word;
  view.format = report::Format::Jsonl;
  view.logits = task.softmax == tasks::Softmax::Skip;
  std::vector<report::Record> records;
  tasks::ScoreSummary summary;
  uint64_t sentence = 0;
  for (const auto& l : scores) {
    summary.add(l);
    records.push_back(report::line_record(view, "-", l, ++sentence));
  }
  records.push_back(report::summary_record(view, summary));
  give(records, out, out_len);
  return LSTMLM_OK;
}

}  // namespace

}  // namespace lstmlm::capi

using lstmlm::capi::guarded;
using lstmlm::capi::need;

extern "C" {

LSTMLM_API lstmlm_status lstmlm_score_jsonl(const lstmlm_model* model, const char* text, size_t text_len,
                                            char** out, size_t* out_len) {
  return guarded("lstmlm_score_jsonl",
                 [&] { return lstmlm::capi::score_jsonl(model, text, text_len, nullptr, out, out_len); });
}

LSTMLM_API lstmlm_status lstmlm_score_jsonl_options(const lstmlm_model* model, const char* text,
                                                    size_t text_len, const lstmlm_score_options* options,
                                                    char** out, size_t* out_len) {
  return guarded("lstmlm_score_jsonl_options",
                 [&] { return lstmlm::capi::score_jsonl(model, text, text_len, options, out, out_len); });
}

LSTMLM_API lstmlm_status lstmlm_predict_jsonl(const lstmlm_model* model, const char* context,
                                              size_t context_len, int32_t top, const char* prefix,
                                              size_t prefix_len, char** out, size_t* out_len) {
  return guarded("lstmlm_predict_jsonl", [&] {
    need(model, "model");
    need(out, "out");
    *out = nullptr;
    lstmlm::capi::predict_records(model, {lstmlm::capi::text_of(context, context_len, "context")}, top,
                                  prefix, prefix_len, "argument", out, out_len);
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_predict_batch_jsonl(const lstmlm_model* model, const char* const contexts[],
                                                    const size_t context_lens[], size_t n, int32_t top,
                                                    const char* prefix, size_t prefix_len, char** out,
                                                    size_t* out_len) {
  return guarded("lstmlm_predict_batch_jsonl", [&] {
    need(model, "model");
    need(out, "out");
    *out = nullptr;
    if (n > lstmlm::capi::kMaxCount)
      throw lstmlm::UsageError("n is " + std::to_string(n) + ", more than LSTMLM_MAX_BATCH (" +
                               std::to_string(lstmlm::capi::kMaxCount) + ")");
    if (n > 0) {
      need(contexts, "contexts");
      need(context_lens, "context_lens");
    }
    std::vector<std::string> ctxs;
    ctxs.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const std::string name = "contexts[" + std::to_string(i) + "]";
      ctxs.push_back(lstmlm::capi::text_of(contexts[i], context_lens[i], name.c_str()));
    }
    lstmlm::capi::predict_records(model, ctxs, top, prefix, prefix_len, "stdin", out, out_len);
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_predict_jsonl_softmax(const lstmlm_model* model, const char* context,
                                                      size_t context_len, int32_t top, const char* softmax,
                                                      char** out, size_t* out_len) {
  return guarded("lstmlm_predict_jsonl_softmax", [&] {
    need(model, "model");
    need(out, "out");
    *out = nullptr;
    lstmlm::capi::predict_records(model, {lstmlm::capi::text_of(context, context_len, "context")}, top,
                                  nullptr, 0, "argument", out, out_len, softmax);
    return LSTMLM_OK;
  });
}

LSTMLM_API lstmlm_status lstmlm_generate_jsonl(const lstmlm_model* model, const char* prompt,
                                               size_t prompt_len, const lstmlm_generate_options* options,
                                               char** out, size_t* out_len) {
  return guarded("lstmlm_generate_jsonl", [&] {
    need(model, "model");
    need(out, "out");
    *out = nullptr;
    lstmlm::tasks::GenerateOptions g = lstmlm::capi::generate_options(options, *model->model);
    g.prompt = lstmlm::capi::text_of(prompt, prompt_len, "prompt");
    g.validate();
    auto engine = model->pool->acquire();
    const auto r = lstmlm::tasks::generate(*engine, g);
    std::vector<lstmlm::report::Record> records;
    for (const auto& s : r.samples) records.push_back(lstmlm::report::sample_record(*model->model, g, s));
    lstmlm::capi::give(records, out, out_len);
    return LSTMLM_OK;
  });
}

LSTMLM_API void lstmlm_string_free(char* s) { std::free(s); }

}  // extern "C"
