// lstmlm.NgramModel: an ARPA model with KenLM's Python names (kenlm.Model): score, full_scores, perplexity,
// order, `word in model`; the numbers of `lstmlm score -m FILE.arpa`.
#include <pybind11/stl.h>

#include "lstmlm/ngram.hpp"
#include "lstmlm/tasks/ngram_score.hpp"
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

}  // namespace

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
            py::list out;
            for (const auto& w : ngram_line(p.model, s.value, bos, eos).words)
              out.append(py::make_tuple(w.logprob / kLn10, w.ngram, w.oov, w.token));
            return out;
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true);
}

}  // namespace lstmlm::py
