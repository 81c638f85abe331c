#include "py_model.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "lstmlm/error.hpp"
#include "lstmlm/sampler.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/keyboard.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tasks/units.hpp"
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

tasks::OovPolicy oov_policy(const std::string& s) { return tasks::oov_choices().parse(s); }

tasks::ContextMode context_mode(const std::string& s) { return tasks::context_choices().parse(s); }

std::vector<tasks::LineScore> score_released(PyModel& m, const tasks::ScoreOptions& o,
                                             const std::vector<std::string>& lines, const std::string& source,
                                             uint64_t first_line) {
  py::gil_scoped_release nogil;
  auto engine = m.pool().acquire();
  tasks::Scorer scorer(*engine, o);
  return scorer.score(lines, source, first_line);
}

tasks::LineScore score_one(PyModel& m, const std::string& sentence, bool bos, bool eos) {
  return score_released(m, score_options(m, bos, eos, "sentence", "skip", false), {sentence}, "<sentence>",
                        1)[0];
}

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
  if (s.fingerprint != 0 && s.fingerprint != model.fingerprint())  // 0: a format 1 pickle, which had none
    throw_usage(std::string(what) + ": the State belongs to another model (its fingerprint differs)");
  const State z = State::zeros(model);
  bool fits = s.state.h.size() == z.h.size();
  for (size_t l = 0; fits && l < z.h.size(); ++l)
    fits = s.state.h[l].size() == z.h[l].size() && s.state.c[l].size() == z.c[l].size();
  if (!fits || (!s.next.empty() && s.next.size() != static_cast<size_t>(model.vocab_size())))
    throw_usage(std::string(what) + ": the State belongs to a model of another shape");
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
  py::gil_scoped_release nogil;
  auto engine = m.pool().acquire();
  engine->step(from, token, next.state, next.next);
  return next;
}

// The path of a model directory: str, bytes or os.PathLike, a str encoded as os.fsencode does (a
// surrogate-escaped byte names that byte, as os.listdir gives it).
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

// Lets Ctrl-C stop a long generate: every 20 ms of generating, at a token, the GIL is taken back for a
// moment to run Python's signal handlers; an exception one raises (KeyboardInterrupt) ends the call.
class SignalCheck {
 public:
  void operator()() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(20)) return;
    last_ = now;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

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

std::shared_ptr<const tasks::Completer> PyModel::completer() { return tasks::Completer::of(*model_); }

namespace {

std::shared_ptr<const tasks::Boost> boost_arg(const PyModel& p, const py::object& b) {
  if (b.is_none()) return nullptr;
  if (!py::isinstance<PyBoost>(b)) throw_usage("boost must be a Boost from Model.load_boost, or None");
  const auto& pb = b.cast<const PyBoost&>();
  if (pb.model != &p.model())
    throw_usage("boost: this Boost was loaded for another Model (its token ids differ)");
  return pb.boost;
}

}  // namespace

PyModel::PyModel(const std::string& path, std::shared_ptr<const Model> model, ModelOptions options)
    : path_(path),
      model_(std::move(model)),
      options_(std::move(options)),
      // Two engine threads per core: while one Python thread holds the GIL to convert its results, another
      // engine computes. Measured with bench/python_threads.py on a 2-core AMD EPYC: 4 Python threads
      // reached 1.83-1.88x one thread this way, 1.49-1.68x with one engine thread per core.
      pool_(model_, EngineOptions{.threads = options_.threads, .precision = options_.precision},
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

  py::class_<PyBoost>(m, "Boost",
                      "Words and phrases with an additive log-prob (Model.load_boost); applied by predict, "
                      "generate and complete when passed as boost=")
      .def("__len__", [](const PyBoost& b) { return b.boost ? b.boost->size() : 0; })
      .def_property_readonly("longest", [](const PyBoost& b) { return b.boost ? b.boost->longest() : 0; })
      .def("__repr__", [](const PyBoost& b) {
        return "<lstmlm.Boost " + std::to_string(b.boost ? b.boost->size() : 0) + " entries>";
      });
  py::class_<PyModel> cls(m, "_Model");
  cls.def(py::init([](const py::object& path_in, const py::object& threads, Text<"precision"> precision,
                      std::optional<int> pad_to, std::optional<int> window, bool stateful) {
            const std::string path = path_arg(path_in);
            ModelOptions o{static_cast<int>(int_arg(threads, "threads", 0, kMaxThreads)),
                           parse_precision(precision.value),
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
          py::arg("pad_to") = py::none(), py::arg("window") = py::none(), py::arg("stateful") = false)
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
          py::arg("ids"))
      .def(
          "score",
          [](PyModel& p, Text<"sentence"> s, bool bos, bool eos) {
            return score_one(p, s.value, bos, eos).logprob / kLn10;
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "perplexity",
          [](PyModel& p, Text<"sentence"> s, bool bos, bool eos) {
            tasks::ScoreSummary sum;
            sum.add(score_one(p, s.value, bos, eos));
            return sum.perplexity();
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "_full_scores",
          [](PyModel& p, Text<"sentence"> s, bool bos, bool eos) {
            const auto line = score_one(p, s.value, bos, eos);
            // KenLM's n-gram length becomes the tokens of context the LSTM has seen + 1, 0 for a token not
            // scored: the CLI's --output-format kenlm.
            py::list out;
            for (const auto& w : line.words) {
              const double log10 = w.scored ? w.logprob / kLn10 : 0.0;
              out.append(py::make_tuple(log10, w.scored ? w.context + 1 : 0, w.oov, w.token));
            }
            return out;
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "word_scores",
          [](PyModel& p, Text<"sentence"> s, bool bos, bool eos, Text<"normalize"> normalize) {
            // `lstmlm score --aggregate words`: a char or subword model's parts summed into words.
            auto o = score_options(p, bos, eos, "sentence", "skip", false);
            o.aggregate = tasks::Aggregate::Words;
            o.normalize = tasks::normalize_choices().parse(normalize.value);
            const auto line = score_released(p, o, {s.value}, "<sentence>", 1)[0];
            py::list out;
            for (const auto& w : line.words)
              out.append(
                  py::make_tuple(w.token, w.scored ? py::object(py::float_(w.logprob / kLn10)) : py::none()));
            return out;
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true, py::arg("normalize") = "none")
      .def(
          "score_batch",
          [](PyModel& p, TextList<"sentences"> sentences, bool bos, bool eos) {
            auto lines = score_released(p, score_options(p, bos, eos, "sentence", "skip", false),
                                        sentences.value, "<batch>", 1);
            py::array_t<double> out(static_cast<py::ssize_t>(lines.size()));
            auto v = out.mutable_unchecked<1>();
            for (size_t i = 0; i < lines.size(); ++i)
              v(static_cast<py::ssize_t>(i)) = lines[i].logprob / kLn10;
            return out;
          },
          py::arg("sentences"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "score_lines",
          [](PyModel& p, TextList<"lines"> lines, Text<"source"> source, const py::object& first_line,
             Text<"context"> context, bool bos, bool eos, Text<"oov"> oov, bool skip_empty,
             Text<"normalize"> normalize) {
            const uint64_t first = first_line_arg(first_line, lines.value.size());
            auto o = score_options(p, bos, eos, context.value, oov.value, skip_empty);
            o.normalize = tasks::normalize_choices().parse(normalize.value);
            auto out = score_released(p, o, lines.value, source.value, first);
            for (auto& l : out) l.words.clear();
            return out;
          },
          py::arg("lines"), py::arg("source") = "-", py::arg("first_line") = 1, py::kw_only(),
          py::arg("context") = "sentence", py::arg("bos") = true, py::arg("eos") = true,
          py::arg("oov") = "skip", py::arg("skip_empty") = false, py::arg("normalize") = "none")
      .def(
          "logprobs",
          [](PyModel& p, const py::object& ids_in) {
            const auto ids = ids_arg(ids_in, "ids", p.model().vocab_size());
            std::vector<MatrixRM> out;
            {
              py::gil_scoped_release nogil;
              auto engine = p.pool().acquire();
              std::vector<State> st{State::zeros(p.model())};
              engine->logprobs({ids}, st, out);
            }
            const auto rows = static_cast<py::ssize_t>(ids.size());
            const auto cols = static_cast<py::ssize_t>(p.model().vocab_size());
            py::array_t<float> a({rows, cols});
            if (rows > 0) std::copy(out[0].data(), out[0].data() + rows * cols, a.mutable_data());
            return a;
          },
          py::arg("ids"))
      .def(
          "_predict",
          [](PyModel& p, const py::object& context_in, const py::object& top, Text<"prefix"> prefix,
             const py::object& boost) {
            // Text (tokenized, as `lstmlm predict`), or token ids fed as given (as `predict --ids`).
            std::string context;
            const bool ids = !load_text(context_in.ptr(), context, "context");
            if (ids) {
              for (int32_t id : ids_arg(context_in, "context", p.model().vocab_size())) {
                if (!context.empty()) context += ' ';
                context += std::to_string(id);
              }
            }
            tasks::PredictOptions o;
            o.top = static_cast<int>(int_arg(top, "top", 0, std::numeric_limits<int>::max()));
            o.window = p.options().window;
            o.ids_input = ids;
            o.prefix = prefix.value;
            if (!o.prefix.empty() && p.model().tokenizer().traits().completion == Completion::WordIndex)
              o.completer = p.completer();
            o.boost = boost_arg(p, boost);
            std::vector<tasks::Prediction> r;
            {
              py::gil_scoped_release nogil;
              auto engine = p.pool().acquire();
              r = tasks::predict(*engine, {context}, o, "<context>", 1);
            }
            py::list out;
            for (const auto& c : r[0].top) out.append(py::make_tuple(c.token, c.id, c.prob, c.logprob));
            return out;
          },
          py::arg("context"), py::arg("top"), py::arg("prefix") = "", py::arg("boost") = py::none())
      .def(
          "_generate",
          [](PyModel& p, Text<"prompt"> prompt, const py::object& max_tokens, float temperature,
             const py::object& top_k, float top_p, float min_p, float repeat_penalty,
             const py::object& repeat_last_n, const py::object& seed, const py::object& num_samples,
             std::optional<bool> stop_at_eos, Text<"oov"> oov, const py::object& boost) {
            // The CLI's ranges (lstmlm generate -n, --top-k, --repeat-last-n, --num-samples).
            GenerateOptions g;
            g.prompt = prompt.value;
            g.max_tokens = static_cast<int>(int_arg(max_tokens, "max_tokens", 0, tasks::kMaxGenerateTokens));
            g.sampler = {
                temperature,
                static_cast<int>(int_arg(top_k, "top_k", 0, kMaxVocabSize)),
                top_p,
                min_p,
                repeat_penalty,
                static_cast<int>(int_arg(repeat_last_n, "repeat_last_n", -1, tasks::kMaxGenerateTokens))};
            g.num_samples = static_cast<int>(int_arg(num_samples, "num_samples", 1, tasks::kMaxSamples));
            g.seed = seed.is_none() ? random_seed() : uint_arg(seed, "seed");
            g.stop_at_eos = stop_at_eos;
            g.window = p.options().window;
            g.oov = oov_policy(oov.value);
            g.boost = boost_arg(p, boost);
            g.validate();
            GenerateResult r;
            {
              py::gil_scoped_release nogil;
              auto engine = p.pool().acquire();
              SignalCheck check;
              r = generate(*engine, g, [&check](int, const GeneratedToken&) { check(); });
            }
            py::list texts;
            for (const auto& s : r.samples)
              texts.append(sample_text(p.model().tokenizer(), prompt.value, s.ids()));
            return py::make_tuple(texts, g.seed);
          },
          py::arg("prompt"), py::arg("max_tokens"), py::arg("temperature"), py::arg("top_k"),
          py::arg("top_p"), py::arg("min_p"), py::arg("repeat_penalty"), py::arg("repeat_last_n"),
          py::arg("seed"), py::arg("num_samples"), py::arg("stop_at_eos"), py::arg("oov"),
          py::arg("boost") = py::none())
      .def(
          "load_boost",
          [](PyModel& p, const py::object& source) {
            PyBoost b;
            b.model = &p.model();
            std::string path;
            if (load_text(source.ptr(), path, "source")) {
              py::gil_scoped_release nogil;
              b.boost = std::make_shared<tasks::Boost>(tasks::Boost::load(p.model(), path));
            } else {
              std::vector<std::string> lines;
              for (const auto& item : py::iter(source)) {
                std::string l;
                if (!load_text(item.ptr(), l, "source", static_cast<Py_ssize_t>(lines.size())))
                  throw_usage("load_boost: give a file path or a sequence of 'PHRASE\\tBONUS' strings");
                lines.push_back(std::move(l));
              }
              b.boost = std::make_shared<tasks::Boost>(tasks::Boost::parse(p.model(), lines, "<boost>"));
            }
            return b;
          },
          py::arg("source"),
          "A Boost from a file path, or from a sequence of 'PHRASE\\tBONUS' lines (bonus: natural log).")
      .def(
          "_complete",
          [](PyModel& p, const PyState& s, Text<"prefix"> prefix, const py::object& top,
             const py::object& boost, const py::object& history) {
            check_state(p.model(), s, "complete");
            const int n = static_cast<int>(int_arg(top, "top", 0, std::numeric_limits<int>::max()));
            auto b = boost_arg(p, boost);
            std::vector<int32_t> hist;
            if (!history.is_none()) hist = ids_arg(history, "history", p.model().vocab_size());
            const State from = s.state;
            std::vector<float> next = s.next;
            const bool chars = p.model().tokenizer().traits().completion == Completion::CharBeam;
            if (!chars) tasks::check_completion(p.model(), Completion::WordIndex, prefix.value);
            std::vector<tasks::Candidate> r;
            auto completer = chars ? nullptr : p.completer();
            {
              py::gil_scoped_release nogil;
              auto engine = p.pool().acquire();
              if (next.empty()) next = next_after(*engine, from);
              if (b) b->apply(hist, next.data(), p.model().vocab_size());
              if (!chars) {
                r = completer->complete(next.data(), prefix.value, n);
              } else {
                // The typed characters fed after the state, then completions to the next word boundary.
                State at = from;
                for (const auto& t : p.model().tokenizer().tokenize(prefix.value)) {
                  if (t.id < 0) continue;
                  State after;
                  engine->step(at, t.id, after, next);
                  at = std::move(after);
                }
                r = tasks::complete_chars(*engine, at, next, n <= 0 ? 64 : n);
                for (auto& c : r) c.token = prefix.value + c.token;
              }
            }
            py::list out;
            for (const auto& c : r) out.append(py::make_tuple(c.token, c.id, c.prob, c.logprob));
            return out;
          },
          py::arg("state"), py::arg("prefix"), py::arg("top"), py::arg("boost") = py::none(),
          py::arg("history") = py::none())
      .def(
          "state_from_bytes",
          [](PyModel& p, const py::bytes& data) {
            const std::string_view b = data;
            PyState s;
            static_cast<tasks::Stream&>(s) = tasks::stream_from_bytes(p.model(), b);
            s.fingerprint = p.model().fingerprint();
            return s;
          },
          py::arg("data"),
          "A State from the bytes State.to_bytes(), the C API's lstmlm_state_serialize or the server's "
          "exported "
          "session (\"bytes\", base64-decoded) wrote for this model; InputError when they are not one.")
      .def(
          "NullContextWrite",
          [](PyModel& p, PyState& s) {
            s.state = State::zeros(p.model());
            s.next.clear();
            s.fed = 0;
            s.fingerprint = p.model().fingerprint();
          },
          py::arg("state"), "Writes the zero state (no context) into `state`.")
      .def(
          "BeginSentenceWrite",
          [](PyModel& p, PyState& s) {
            const int32_t start = tasks::start_token(p.model().tokenizer());
            if (start < 0) {
              s.state = State::zeros(p.model());
              s.next.clear();
              s.fed = 0;
              s.fingerprint = p.model().fingerprint();
              return;
            }
            s = state_after(p, State::zeros(p.model()), start);
            s.fed = 1;
          },
          py::arg("state"), "Writes the state after the start token (bos, else eos) into `state`.")
      .def(
          "BaseScore",
          [](PyModel& p, const PyState& in, Text<"word"> word_in, PyState& out) {
            check_state(p.model(), in, "BaseScore");
            const std::string& word = word_in.value;
            const int32_t id =
                word == "</s>" && p.model().tokenizer().eos_id() && !p.model().vocab().find(word)
                    ? *p.model().tokenizer().eos_id()
                    : word_id(p.model(), word);
            // Copied with the GIL held: once it is released, another thread may rewrite `in` (or `out`).
            const State from = in.state;
            std::vector<float> next = in.next;
            PyState after;
            after.fingerprint = p.model().fingerprint();
            after.fed = in.fed + 1;
            {
              py::gil_scoped_release nogil;
              auto engine = p.pool().acquire();
              if (next.empty()) next = next_after(*engine, from);
              engine->step(from, id, after.state, after.next);
            }
            out = std::move(after);
            return next[static_cast<size_t>(id)] / kLn10;
          },
          py::arg("in_state"), py::arg("word"), py::arg("out_state"),
          "log10 p(word | in_state); writes the state after `word` into out_state (which may be in_state).");
  bind_jsonl(cls);
}

}  // namespace lstmlm::py
