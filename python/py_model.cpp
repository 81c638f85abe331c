#include "py_model.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <limits>
#include <optional>
#include <thread>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/keyboard.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tasks/stream.hpp"
#include "lstmlm/units.hpp"
#include "py_args.hpp"
#include "py_errors.hpp"
#include "py_state.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {

tasks::WindowOptions window_of(const Model& model, std::optional<int> pad_to, std::optional<int> window,
                               bool stateful) {
  if (int(pad_to.has_value()) + int(window.has_value()) + int(stateful) > 1)
    throw_usage("pad_to, window and stateful exclude each other: give one");
  std::optional<tasks::WindowOptions> given;
  if (pad_to) given = tasks::WindowOptions{tasks::WindowMode::Pad, *pad_to};
  if (window) given = tasks::WindowOptions{tasks::WindowMode::Window, *window};
  if (stateful) given = tasks::WindowOptions{};
  const auto w = tasks::default_window(model, given);
  tasks::check_window(w);
  return w;
}

}  // namespace

tasks::OovPolicy oov_policy(const std::string& s) { return tasks::oov_choices().parse(s); }

tasks::ContextMode context_mode(const std::string& s) { return tasks::context_choices().parse(s); }

int32_t word_id(const Model& model, const std::string& word) {
  if (auto id = model.vocab().find(word)) return *id;
  if (auto unk = model.tokenizer().unk_id()) return *unk;
  throw InputError("'" + word + "' is not in the vocabulary and the model has no unk_token");
}

void check_state(const Model& model, const PyState& s, const char* what) {
  if (!s.written())
    throw_usage(std::string(what) +
                ": the State has not been written: call BeginSentenceWrite or "
                "NullContextWrite first");
  try {
    tasks::check_stream(model, s, s.fingerprint);  // 0: a format 1 pickle, which had none
  } catch (const InputError& e) {
    throw_usage(std::string(what) + ": " + e.what());
  }
}

// ln p of every next token after `from` (as predict does for a row without input).
std::vector<float> next_after(Engine& engine, const State& from) {
  std::vector<State> st{from};
  MatrixRM out;
  engine.predict({{}}, st, out);
  return {out.data(), out.data() + out.cols()};
}

// The state after `token` from `from` (a copy the caller made with the GIL held: the engine reads it
// without the GIL, while another thread may rewrite the State it came from).
PyState state_after(PyModel& m, const State& from, int32_t token) {
  PyState next;
  next.fingerprint = m.model().fingerprint();
  next.state = from;
  py::gil_scoped_release nogil;
  auto engine = m.pool().acquire();
  tasks::Stream* one = &next;
  tasks::advance(*engine, std::span<tasks::Stream* const>(&one, 1), {{token}});
  return next;
}

std::string path_arg(const py::object& path) {
  py::object p = py::module_::import("os").attr("fspath")(path);
  if (PyUnicode_Check(p.ptr())) {
    auto b = py::reinterpret_steal<py::object>(PyUnicode_EncodeFSDefault(p.ptr()));
    if (b) return {PyBytes_AS_STRING(b.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(b.ptr()))};
    PyErr_Clear();  // a surrogate the file system encoding cannot take: load_text names it
  }
  std::string out;
  load_text(p.ptr(), out, "path");
  return out;
}

namespace {

std::vector<int32_t> encode(const Model& model, const std::string& text, bool bos, bool eos) {
  std::vector<int32_t> ids;
  const auto& tok = model.tokenizer();
  const int32_t start = tasks::start_token(tok);
  if (bos && start >= 0) ids.push_back(start);
  for (const auto& t : tasks::read_tokens(model, text, false, tasks::OovPolicy::Skip, {"<text>", 1}))
    if (t.id >= 0) ids.push_back(t.id);
  if (eos && tok.eos_id()) ids.push_back(*tok.eos_id());
  return ids;
}

std::optional<std::string> token_or_none(const Model& model, std::optional<int32_t> id) {
  if (!id) return std::nullopt;
  return model.vocab().token(*id);
}

}  // namespace

tasks::ScoreOptions score_options(const PyModel& m, bool bos, bool eos, const std::string& context,
                                  const std::string& oov, bool skip_empty) {
  tasks::ScoreOptions o;
  o.context = context_mode(context);
  o.add_start = bos;
  o.append_eos = eos;
  o.oov = oov_policy(oov);
  o.skip_empty = skip_empty;
  o.window = m.options().window;
  return o;
}

tasks::CacheOptions cache_arg(const py::object& window, double lambda, double theta) {
  tasks::CacheOptions c;
  c.window = static_cast<int>(int_arg(window, "cache_window", 0, int64_t{1} << 20));
  c.lambda = lambda;
  c.theta = theta;
  c.validate();
  return c;
}

std::shared_ptr<const tasks::Completer> PyModel::completer() { return tasks::Completer::of(*model_); }

std::shared_ptr<const tasks::Boost> boost_arg(const PyModel& p, const py::object& b) {
  if (b.is_none()) return nullptr;
  if (!py::isinstance<PyBoost>(b)) throw_usage("boost must be a Boost from Model.load_boost, or None");
  const auto& pb = b.cast<const PyBoost&>();
  if (pb.model.get() != &p.model())
    throw_usage("boost: this Boost was loaded for another Model (its token ids differ)");
  return pb.boost;
}

PyModel::PyModel(const std::string& path, std::shared_ptr<const Model> model, ModelOptions options)
    : path_(path),
      model_(std::move(model)),
      options_(std::move(options)),
      // Two engine threads per core: while one Python thread holds the GIL to convert its results, another
      // engine computes. Measured with bench/python_threads.py on a 2-core AMD EPYC: 4 Python threads
      // reached 1.83-1.88x one thread this way, 1.49-1.68x with one engine thread per core.
      pool_(
          model_,
          EngineOptions{.threads = options_.threads, .precision = options_.precision, .fold = options_.fold},
          2 * std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxThreads)) {}

void bind_model(py::module_& m) {
  py::class_<tasks::LineScore>(m, "LineScore", "One line's totals, as `lstmlm score` computes them.")
      .def_readonly("line", &tasks::LineScore::line, "1-based line number within its source")
      .def_readonly("skipped", &tasks::LineScore::skipped, "an empty line under skip_empty")
      .def_readonly("logprob", &tasks::LineScore::logprob, "sum of ln p of the scored tokens (eos included)")
      .def_readonly("oov_logprob", &tasks::LineScore::oov_logprob,
                    "the part of logprob from OOVs scored as unk")
      .def_readonly("tokens", &tasks::LineScore::tokens, "scored tokens (eos included)")
      .def_readonly("oovs", &tasks::LineScore::oovs, "OOV words (scored as unk or skipped)")
      .def_readonly("oov_tokens", &tasks::LineScore::oov_tokens, "OOV words that were scored (as unk)")
      .def_readonly("nonfinite", &tasks::LineScore::nonfinite, "scored tokens with a NaN or infinite ln p")
      .def_property_readonly("log10prob", [](const tasks::LineScore& l) { return l.logprob / kLn10; })
      .def("__repr__", [](const tasks::LineScore& l) {
        return "LineScore(line=" + std::to_string(l.line) + ", logprob=" + std::to_string(l.logprob) +
               ", tokens=" + std::to_string(l.tokens) + ", oovs=" + std::to_string(l.oovs) + ")";
      });

  py::class_<PyModel> cls(m, "_Model");
  cls.def(py::init([](const py::object& path_in, const py::object& threads, Text<"precision"> precision,
                      std::optional<int> pad_to, std::optional<int> window, bool stateful,
                      Text<"fold_embedding"> fold) {
            const std::string path = path_arg(path_in);
            ModelOptions o{static_cast<int>(int_arg(threads, "threads", 0, kMaxThreads)),
                           parse_precision(precision.value),
                           tasks::fold_choices().parse(fold.value),
                           {}};
            // The model is loaded without the GIL: other Python threads run meanwhile.
            std::unique_ptr<PyModel> p;
            {
              py::gil_scoped_release nogil;
              auto model = Model::load(path);
              o.window = window_of(*model, pad_to, window, stateful);
              p = std::make_unique<PyModel>(path, std::move(model), o);
            }
            return p;
          }),
          py::arg("path"), py::arg("threads") = 0, py::arg("precision") = "fp32", py::kw_only(),
          py::arg("pad_to") = py::none(), py::arg("window") = py::none(), py::arg("stateful") = false,
          py::arg("fold_embedding") = "auto")
      .def_property_readonly("path", &PyModel::path)
      .def_property_readonly("vocab_size", [](const PyModel& p) { return p.model().vocab_size(); })
      .def_property_readonly(
          "vocab", [](const PyModel& p) { return p.model().vocab().tokens(); },
          "The vocabulary: token strings by id (a new list each time).")
      .def_property_readonly("kernels", [](PyModel& p) { return std::string(p.pool().first().kernels()); })
      .def_property_readonly("threads", [](PyModel& p) { return p.pool().first().threads(); })
      .def_property_readonly(
          "precision", [](const PyModel& p) { return std::string(precision_name(p.options().precision)); })
      .def_property_readonly(
          "fold_embedding", [](const PyModel& p) { return tasks::fold_choices().name(p.options().fold); },
          "Layer 0's input per token: 'auto', 'always' (a table) or 'never' (the embedding through W_ih).")
      .def_property_readonly(
          "max_concurrency", [](PyModel& p) { return p.pool().max_engines(); },
          "Calls that run at once (engines: two engine threads per core); more wait for one.")
      .def_property_readonly("window",
                             [](const PyModel& p) -> py::object {
                               const auto& w = p.options().window;
                               if (!w.windowed()) return py::none();
                               return py::make_tuple(w.mode == tasks::WindowMode::Pad ? "pad_to" : "window",
                                                     w.length);
                             })
      .def_property_readonly("tokenizer_type",
                             [](const PyModel& p) { return p.model().tokenizer().traits().name; })
      .def_property_readonly(
          "bos", [](const PyModel& p) { return token_or_none(p.model(), p.model().tokenizer().bos_id()); })
      .def_property_readonly(
          "eos", [](const PyModel& p) { return token_or_none(p.model(), p.model().tokenizer().eos_id()); })
      .def_property_readonly(
          "unk", [](const PyModel& p) { return token_or_none(p.model(), p.model().tokenizer().unk_id()); })
      .def("__contains__",
           [](const PyModel& p, Text<"word"> w) { return p.model().vocab().find(w.value).has_value(); })
      .def(
          "vocab_index",
          [](const PyModel& p, Text<"word"> w) -> std::optional<int32_t> {
            return p.model().vocab().find(w.value);
          },
          py::arg("word"))
      .def(
          "tokenize",
          [](const PyModel& p, Text<"text"> text) {
            std::vector<std::string> out;
            for (const auto& t : p.model().tokenizer().tokenize(text.value)) out.push_back(t.text);
            return out;
          },
          py::arg("text"))
      .def(
          "encode",
          [](const PyModel& p, Text<"text"> text, bool bos, bool eos) {
            return encode(p.model(), text.value, bos, eos);
          },
          py::arg("text"), py::kw_only(), py::arg("bos") = false, py::arg("eos") = false)
      .def(
          "decode",
          [](const PyModel& p, const py::object& ids) {
            return p.model().tokenizer().detokenize(ids_arg(ids, "ids", p.model().vocab_size()));
          },
          py::arg("ids"));
  bind_scoring(cls);
  bind_keyboard(m, cls);
  bind_generate(cls);
  bind_model_states(cls);
  bind_jsonl(cls);
}

}  // namespace lstmlm::py
