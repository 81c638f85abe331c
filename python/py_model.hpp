// lstmlm.Model: one loaded model shared by any number of Python threads. Every method turns its arguments
// into the library's types with the GIL held, runs the library's own task (the CLI's code: the numbers are
// the CLI's) on an engine leased from the pool with the GIL released, and converts the results back.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "lstmlm/engine_pool.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/keyboard.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tasks/window.hpp"
#include "py_args.hpp"

namespace lstmlm::py {

struct ModelOptions {
  int threads = 0;  // per call, in [0, kMaxThreads]; 0: one per core, as the CLI
  Precision precision = Precision::Fp32;
  tasks::WindowOptions window;  // resolved as the CLI does: input_length -> Pad
};

class PyModel {
 public:
  PyModel(const std::string& path, std::shared_ptr<const Model> model, ModelOptions options);
  const Model& model() const { return *model_; }
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

// A Boost (tasks::Boost) with the model it was read for: a boost is token ids of one vocabulary.
struct PyBoost {
  std::shared_ptr<const tasks::Boost> boost;
  const Model* model = nullptr;
};

// The options of `lstmlm score` for these arguments: context "sentence"|"document", oov "skip"|"error",
// the model's window.
tasks::ScoreOptions score_options(const PyModel& m, bool bos, bool eos, const std::string& context,
                                  const std::string& oov, bool skip_empty);

void bind_model(pybind11::module_& m);
// Model.score_jsonl (py_jsonl.cpp): the perplexity filter of `lstmlm score --input-format jsonl`.
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
