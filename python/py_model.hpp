// lstmlm.Model: one loaded model shared by any number of Python threads. Every method turns its arguments
// into the library's types with the GIL held, runs the library's own task (the CLI's code: the numbers are
// the CLI's) on an engine leased from the pool with the GIL released, and converts the results back.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "lstmlm/engine_pool.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/keyboard.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tasks/window.hpp"
#include "py_args.hpp"
#include "py_state.hpp"

namespace lstmlm::py {

struct ModelOptions {
  int threads = 0;  // per call, in [0, kMaxThreads]; 0: one per core, as the CLI
  Precision precision = Precision::Fp32;
  EmbeddingFold fold = EmbeddingFold::Auto;
  tasks::WindowOptions window;  // resolved as the CLI does: input_length -> Pad
};

class PyModel {
 public:
  PyModel(const std::string& path, std::shared_ptr<const Model> model, ModelOptions options);
  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& shared_model() const { return model_; }
  const ModelOptions& options() const { return options_; }
  EnginePool& pool() { return pool_; }
  // The model's word-completion index (tasks::Completer::of).
  std::shared_ptr<const tasks::Completer> completer();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::shared_ptr<const Model> model_;
  ModelOptions options_;
  EnginePool pool_;
};

// A Boost (tasks::Boost) with the model it was read for, kept alive by it: a boost is token ids of one
// vocabulary, and no later model can take that model's address while the Boost lives.
struct PyBoost {
  std::shared_ptr<const tasks::Boost> boost;
  std::shared_ptr<const Model> model;
};

// The options of `lstmlm score` for these arguments: context "sentence"|"document", oov "skip"|"error",
// the model's window.
// cache_window=, cache_lambda=, cache_theta= (tasks::CacheOptions, checked by its validate()).
tasks::CacheOptions cache_arg(const pybind11::object& window, double lambda, double theta);
// The keywords' defaults: the library's.
#define LSTMLM_PY_CACHE_ARGS                                                                       \
  pybind11::arg("cache_window") = 0, pybind11::arg("cache_lambda") = tasks::CacheOptions{}.lambda, \
  pybind11::arg("cache_theta") = tasks::CacheOptions{}.theta
tasks::ScoreOptions score_options(const PyModel& m, bool bos, bool eos, const std::string& context,
                                  const std::string& oov, bool skip_empty);

// What the files binding the Model's methods share (py_model.cpp).
tasks::OovPolicy oov_policy(const std::string& s);  // the request vocabulary's oov words
tasks::ContextMode context_mode(const std::string& s);
// A word's id, else unk's; InputError when the model has neither.
int32_t word_id(const Model& model, const std::string& word);
// UsageError unless `s` was written by this model (`what`: the calling method, for the message).
// The path of a model: str, bytes or os.PathLike, a str encoded as os.fsencode does (a surrogate-escaped
// byte names that byte, as os.listdir gives it).
std::string path_arg(const pybind11::object& path);
void check_state(const Model& model, const PyState& s, const char* what);
// ln p of every next token after `from` (as predict does for a row without input).
std::vector<float> next_after(Engine& engine, const State& from);
// The state after `token` from `from` (a copy the caller made with the GIL held: the engine reads it
// without the GIL, while another thread may rewrite the State it came from).
PyState state_after(PyModel& m, const State& from, int32_t token);
// boost=: None, or a Boost this model loaded; UsageError otherwise.
std::shared_ptr<const tasks::Boost> boost_arg(const PyModel& p, const pybind11::object& b);
// mix=: None, or a Mixture of this model (lstmlm.Mixture: its distribution over the model's ids); UsageError
// otherwise (py_ngram.cpp).
std::shared_ptr<const tasks::MixRow> mix_arg(const PyModel& p, const pybind11::object& mix);

// lstmlm._Model, its methods bound by subject: the model and its vocabulary (py_model.cpp), scoring
// (py_scoring.cpp), the keyboard and Boost (py_keyboard.cpp), generation (py_generate.cpp), KenLM-style
// states (py_model_states.cpp) and the JSONL perplexity filter (py_jsonl.cpp).
void bind_model(pybind11::module_& m);
void bind_scoring(pybind11::class_<PyModel>& cls);
void bind_keyboard(pybind11::module_& m, pybind11::class_<PyModel>& cls);
void bind_generate(pybind11::class_<PyModel>& cls);
void bind_model_states(pybind11::class_<PyModel>& cls);
void bind_jsonl(pybind11::class_<PyModel>& cls);

}  // namespace lstmlm::py

// A Model (self) or a LineScore whose __init__ never ran is a UsageError, not uninitialized memory.
namespace pybind11::detail {
template <>
class type_caster<lstmlm::py::PyModel>
    : public lstmlm::py::InitializedCaster<lstmlm::py::PyModel, "lstmlm.Model", "lstmlm.Model(path)"> {};
template <>
class type_caster<lstmlm::tasks::LineScore>
    : public lstmlm::py::InitializedCaster<lstmlm::tasks::LineScore, "lstmlm.LineScore",
                                           "Model.score_lines"> {};
}  // namespace pybind11::detail
