// Model's scoring: score, perplexity, full_scores, word_scores, score_batch, score_lines, logprobs (the
// numbers of `lstmlm score`).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "lstmlm/tasks/request.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tasks/states.hpp"
#include "lstmlm/units.hpp"
#include "py_args.hpp"
#include "py_errors.hpp"
#include "py_model.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {

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

}  // namespace

void bind_scoring(py::class_<PyModel>& cls) {
  cls.def(
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
             Text<"normalize"> normalize, Text<"softmax"> softmax, bool reverse,
             const py::object& cache_window, double cache_lambda, double cache_theta) {
            const uint64_t first = first_line_arg(first_line, lines.value.size());
            auto o = score_options(p, bos, eos, context.value, oov.value, skip_empty);
            o.normalize = tasks::normalize_choices().parse(normalize.value);
            o.softmax = tasks::softmax_choices().parse(softmax.value);
            o.reverse = reverse;
            o.cache = cache_arg(cache_window, cache_lambda, cache_theta);
            auto out = score_released(p, o, lines.value, source.value, first);
            for (auto& l : out) l.words.clear();
            return out;
          },
          py::arg("lines"), py::arg("source") = "-", py::arg("first_line") = 1, py::kw_only(),
          py::arg("context") = "sentence", py::arg("bos") = true, py::arg("eos") = true,
          py::arg("oov") = "skip", py::arg("skip_empty") = false, py::arg("normalize") = "none",
          py::arg("softmax") = "full", py::arg("reverse") = false, LSTMLM_PY_CACHE_ARGS)
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
          "states",
          [](PyModel& p, Text<"sentence"> sentence, bool bos, bool eos) {
            const auto o = score_options(p, bos, eos, "sentence", "skip", false);
            tasks::LineStates s;
            {
              py::gil_scoped_release nogil;
              auto engine = p.pool().acquire();
              s = tasks::StateReader(*engine, o).read({sentence.value}, "<sentence>", 1)[0];
            }
            auto array = [](const MatrixRM& m) {
              py::array_t<float> a({static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())});
              if (m.size() > 0) std::copy(m.data(), m.data() + m.size(), a.mutable_data());
              return a;
            };
            py::list h, c;
            for (size_t k = 0; k < s.h.size(); ++k) {
              h.append(array(s.h[k]));
              c.append(s.c[k].rows() > 0 ? py::object(array(s.c[k])) : py::none());
            }
            return py::make_tuple(s.tokens, h, c);
          },
          py::arg("sentence"), py::arg("bos") = true, py::arg("eos") = true);
}

}  // namespace lstmlm::py
