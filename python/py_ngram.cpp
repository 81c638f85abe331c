// lstmlm.NgramModel: an ARPA model with KenLM's Python names (kenlm.Model): score, full_scores, perplexity,
// order, `word in model`; the numbers of `lstmlm score -m FILE.arpa`.
#include <pybind11/stl.h>

#include "lstmlm/ngram.hpp"
#include "lstmlm/tasks/mix.hpp"
#include "lstmlm/tasks/ngram_score.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/units.hpp"
#include "py_args.hpp"
#include "py_errors.hpp"
#include "py_model.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {

tasks::LineScore ngram_line(const std::shared_ptr<const NgramModel>& m, const std::string& sentence, bool bos,
                            bool eos) {
  tasks::ScoreOptions o;
  o.add_start = bos;
  o.append_eos = eos;
  tasks::NgramScorer scorer(m, o);
  py::gil_scoped_release nogil;
  return scorer.score({sentence}, "<sentence>", 1)[0];
}

// The model, immutable and shared with the scorers that run without the GIL.
struct PyNgram {
  std::shared_ptr<const NgramModel> model;
};

// A Model mixed with ARPA models (score --mix): the Model kept alive by the Python object, the mixture's
// immutable part computed once.
struct PyMixture {
  py::object owner;  // the lstmlm.Model
  PyModel* model;
  std::shared_ptr<const tasks::MixPlan> plan;
  std::shared_ptr<const tasks::MixRow> row;  // predict and generate
};

std::vector<tasks::LineScore> mixed_lines(PyMixture& m, const tasks::ScoreOptions& o,
                                          const std::vector<std::string>& lines, const std::string& source,
                                          uint64_t first_line) {
  py::gil_scoped_release nogil;
  auto engine = m.model->pool().acquire();
  tasks::Scorer scorer(*engine, o);
  auto out = scorer.score(lines, source, first_line);
  tasks::NgramMix(m.plan, o, &m.model->model()).mix(out, &*engine);
  return out;
}

}  // namespace

std::shared_ptr<const tasks::MixRow> mix_arg(const PyModel& p, const py::object& mix) {
  if (mix.is_none()) return nullptr;
  if (!py::isinstance<PyMixture>(mix)) throw UsageError("mix: an lstmlm.Mixture of this model, or None");
  const PyMixture& x = mix.cast<const PyMixture&>();
  if (x.model != &p) throw UsageError("mix: a Mixture of another Model");
  return x.row;
}

void bind_ngram(py::module_& m) {
  using Ptr = PyNgram;
  py::class_<PyNgram>(m, "_NgramModel")
      .def(py::init([](const py::object& path_in) {
             const std::string path = path_arg(path_in);  // str, bytes or os.PathLike, as Model takes
             py::gil_scoped_release nogil;
             return PyNgram{NgramModel::load(path)};
           }),
           py::arg("path"))
      .def_property_readonly("order", [](const PyNgram& p) { return p.model->order(); })
      .def_property_readonly("path", [](const PyNgram& p) { return p.model->path(); })
      .def_property_readonly("vocab_size", [](const PyNgram& p) { return p.model->vocab_size(); })
      .def_property_readonly("counts", [](const PyNgram& p) { return p.model->counts(); })
      .def_property_readonly("unk_added", [](const PyNgram& p) { return p.model->unk_added(); })
      .def(
          "__contains__", [](const PyNgram& p, Text<"word"> w) { return p.model->find(w.value).has_value(); },
          py::arg("word"))
      .def(
          "score",
          [](const Ptr& p, Text<"sentence"> s, bool bos, bool eos) {
            return ngram_line(p.model, s.value, bos, eos).logprob / kLn10;
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "perplexity",
          [](const Ptr& p, Text<"sentence"> s, bool bos, bool eos) {
            tasks::ScoreSummary sum;
            sum.add(ngram_line(p.model, s.value, bos, eos));
            return sum.perplexity();
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "_full_scores",
          [](const Ptr& p, Text<"sentence"> s, bool bos, bool eos) {
            const auto line = ngram_line(p.model, s.value, bos, eos);
            py::list out;
            for (const auto& w : line.words)
              out.append(py::make_tuple(w.logprob / kLn10, w.ngram, w.oov, w.token));
            return out;
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true);

  py::class_<PyMixture>(m, "_Mixture")
      .def(py::init([](const py::object& model, const py::list& members, Text<"mode"> mode) {
             if (!py::isinstance<PyModel>(model))
               throw UsageError("Mixture: the first argument is an lstmlm.Model");
             PyModel& pm = model.cast<PyModel&>();
             auto first_words = tasks::NgramMix::words_of(pm.model());  // a word model, before any ARPA read
             std::vector<tasks::MixMember> specs;
             std::vector<tasks::MixPlan::Member> loaded;
             for (const auto& item : members) {
               if (!py::isinstance<py::tuple>(item) || py::len(item) != 2)
                 throw UsageError("Mixture: each member is a (NgramModel, Model or path, weight) pair");
               const auto pair = item.cast<py::tuple>();
               if (!py::isinstance<py::float_>(pair[1]) && !py::isinstance<py::int_>(pair[1]))
                 throw UsageError("Mixture: a member's weight is a number");
               tasks::MixPlan::Member m{nullptr, nullptr, pair[1].cast<double>(), 1, ""};
               if (py::isinstance<PyNgram>(pair[0])) {
                 m.model = pair[0].cast<PyNgram&>().model;
                 m.path = m.model->path();
               } else if (py::isinstance<PyModel>(pair[0])) {
                 const PyModel& other = pair[0].cast<const PyModel&>();
                 tasks::require_word_model(other.model());
                 m.neural = other.shared_model();
                 m.path = other.path();
               } else {
                 // A path: an ARPA file or a model directory, read as --mix reads it.
                 m.path = path_arg(pair[0]);
                 py::gil_scoped_release nogil;
                 auto one = tasks::load_mix({m.path + ":1"}, first_words);
                 m.model = one->members[0].model;
                 m.neural = one->members[0].neural;
               }
               specs.push_back({m.path, m.weight});
               loaded.push_back(std::move(m));
             }
             if (loaded.empty())
               throw UsageError("Mixture: give at least one (NgramModel, Model or path, weight) pair");
             const tasks::MixMode how = tasks::mix_mode_choices().parse(mode.value);
             tasks::check_mix_weights(specs);
             auto plan = std::make_shared<tasks::MixPlan>(std::move(loaded), first_words);
             plan->mode = how;
             auto row = std::make_shared<const tasks::MixRow>(plan, pm.model());
             return PyMixture{model, &pm, std::move(plan), std::move(row)};
           }),
           py::arg("model"), py::arg("members"), py::arg("mode") = "linear")
      .def_property_readonly("model", [](const PyMixture& x) { return x.owner; })
      .def_property_readonly("weights",
                             [](const PyMixture& x) {
                               std::vector<double> w{x.plan->first_weight};
                               for (const auto& mb : x.plan->members) w.push_back(mb.weight);
                               return w;
                             })
      .def(
          "score",
          [](PyMixture& x, Text<"sentence"> s, bool bos, bool eos) {
            auto o = score_options(*x.model, bos, eos, "sentence", "skip", false);
            return mixed_lines(x, o, {s.value}, "<sentence>", 1)[0].logprob / kLn10;
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "perplexity",
          [](PyMixture& x, Text<"sentence"> s, bool bos, bool eos) {
            auto o = score_options(*x.model, bos, eos, "sentence", "skip", false);
            tasks::ScoreSummary sum;
            sum.add(mixed_lines(x, o, {s.value}, "<sentence>", 1)[0]);
            return sum.perplexity();
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "_full_scores",
          [](PyMixture& x, Text<"sentence"> s, bool bos, bool eos) {
            auto o = score_options(*x.model, bos, eos, "sentence", "skip", false);
            const auto lines = mixed_lines(x, o, {s.value}, "<sentence>", 1);
            py::list out;
            for (const auto& w : lines[0].words)
              out.append(py::make_tuple(w.scored ? w.logprob / kLn10 : 0.0, w.scored ? w.context + 1 : 0,
                                        w.oov, w.token));
            return out;
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "score_lines",
          [](PyMixture& x, TextList<"lines"> lines, Text<"source"> source, Text<"context"> context, bool bos,
             bool eos, Text<"oov"> oov) {
            auto o = score_options(*x.model, bos, eos, context.value, oov.value, false);
            auto out = mixed_lines(x, o, lines.value, source.value, 1);
            for (auto& l : out) l.words.clear();
            return out;
          },
          py::arg("lines"), py::arg("source") = "-", py::kw_only(), py::arg("context") = "sentence",
          py::arg("bos") = true, py::arg("eos") = true, py::arg("oov") = "skip");
}

}  // namespace lstmlm::py
