// The C API's tasks as JSON lines (include/lstmlm/lstmlm.h): score, predict and generate run by the library's
// tasks and written by its jsonl writer, so a binding (the WebAssembly module's JavaScript API) gets the
// CLI's records, numbers and defaults without a task of its own.
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

// The options as this library knows them, from a caller's struct of `struct_size` bytes.
tasks::GenerateOptions generate_options(const lstmlm_generate_options* o, const Model& model) {
  tasks::GenerateOptions g;
  g.window = tasks::default_window(model, std::nullopt);
  if (o == nullptr) return g;
  constexpr size_t known = sizeof(lstmlm_generate_options);
  if (o->struct_size < known)
    throw UsageError("options->struct_size is " + std::to_string(o->struct_size) + ", less than the " +
                     std::to_string(known) +
                     " bytes of the first version (use LSTMLM_GENERATE_OPTIONS_INIT)");
  if (o->struct_size > known) {
    const auto* extra = reinterpret_cast<const unsigned char*>(o) + known;
    for (size_t i = 0; i < o->struct_size - known; ++i)
      if (extra[i] != 0) throw UsageError("options set fields this library version does not know");
  }
  g.max_tokens = o->max_tokens;
  g.num_samples = o->num_samples;
  g.sampler.temperature = o->temperature;
  g.sampler.top_k = o->top_k;
  g.sampler.top_p = o->top_p;
  g.seed = o->seed;
  return g;
}

// predict's records of `contexts` (their source and first line as the CLI's for messages).
void predict_records(const lstmlm_model* model, const std::vector<std::string>& contexts, int32_t top,
                     const char* prefix, size_t prefix_len, const std::string& source, char** out,
                     size_t* out_len) {
  if (top < 0)
    throw UsageError::option("top", " must be >= 0 (0: the whole vocabulary), got " + std::to_string(top));
  tasks::PredictOptions opt;
  opt.top = top;
  opt.prefix = text_of(prefix, prefix_len, "prefix");
  opt.window = tasks::default_window(*model->model, std::nullopt);
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

}  // namespace

}  // namespace lstmlm::capi

using lstmlm::capi::guarded;
using lstmlm::capi::need;

extern "C" {

LSTMLM_API lstmlm_status lstmlm_score_jsonl(const lstmlm_model* model, const char* text, size_t text_len,
                                            char** out, size_t* out_len) {
  return guarded("lstmlm_score_jsonl", [&] {
    need(model, "model");
    need(out, "out");
    *out = nullptr;
    const std::string input = lstmlm::capi::text_of(text, text_len, "text");
    std::vector<std::string> lines;
    std::vector<lstmlm::tasks::LineEnd> ends;
    lstmlm::tasks::split_lines(input, lines, ends);
    lstmlm::tasks::ScoreOptions task;
    task.window = lstmlm::tasks::default_window(*model->model, std::nullopt);
    task.validate();
    auto engine = model->pool->acquire();
    lstmlm::tasks::Scorer scorer(*engine, task);
    const auto scores = scorer.score(lines, "-", 1, ends);
    lstmlm::report::ScoreView view;
    view.verbosity = lstmlm::report::Verbosity::Word;
    view.format = lstmlm::report::Format::Jsonl;
    std::vector<lstmlm::report::Record> records;
    lstmlm::tasks::ScoreSummary summary;
    uint64_t sentence = 0;
    for (const auto& l : scores) {
      summary.add(l);
      records.push_back(lstmlm::report::line_record(view, "-", l, ++sentence));
    }
    records.push_back(lstmlm::report::summary_record(view, summary));
    lstmlm::capi::give(records, out, out_len);
    return LSTMLM_OK;
  });
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
