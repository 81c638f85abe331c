// The library's score summary and report records in Python (as CTranslate2 binds its scoring results):
// lstmlm.dask sums partitions with ScoreSummary and writes the CLI's jsonl records with these, so its
// numbers and bytes are the CLI's by construction.
#include "py_records.hpp"

#include "lstmlm/report/record.hpp"
#include "lstmlm/report/score.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/units.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {

// score -v sentence --output-format jsonl: the records dask's output holds.
report::ScoreView sentence_view() {
  report::ScoreView v;
  v.verbosity = report::Verbosity::Sentence;
  v.format = report::Format::Jsonl;
  return v;
}

std::string jsonl(const report::Record& r) {
  std::string s;
  report::make_writer(report::Format::Jsonl)->record(r, s);
  return s;
}

// A path or source name as str (surrogate-escaped bytes kept as bytes) or bytes: the bytes the CLI names.
std::string name_bytes(const py::handle& h) {
  if (PyBytes_Check(h.ptr()))
    return std::string(PyBytes_AS_STRING(h.ptr()), size_t(PyBytes_GET_SIZE(h.ptr())));
  if (!PyUnicode_Check(h.ptr())) throw py::type_error("file: a str or bytes");
  PyObject* b = PyUnicode_AsEncodedString(h.ptr(), "utf-8", "surrogateescape");
  if (!b) throw py::error_already_set();
  std::string s(PyBytes_AS_STRING(b), size_t(PyBytes_GET_SIZE(b)));
  Py_DECREF(b);
  return s;
}

// A line's totals (a LineScore without its words), as a worker of lstmlm.dask sends them.
tasks::LineScore totals(uint64_t line, bool skipped, double logprob, int64_t tokens, int64_t oovs,
                        int64_t oov_tokens, int64_t nonfinite, double oov_logprob) {
  tasks::LineScore l;
  l.line = line;
  l.skipped = skipped;
  l.logprob = logprob;
  l.tokens = tokens;
  l.oovs = oovs;
  l.oov_tokens = oov_tokens;
  l.nonfinite = nonfinite;
  l.oov_logprob = oov_logprob;
  return l;
}

}  // namespace

void bind_records(py::module_& m) {
  py::class_<tasks::ScoreSummary>(m, "ScoreSummary",
                                  "The totals of `lstmlm score` over lines, summed as the CLI sums them.")
      .def(py::init<>())
      .def(
          "add",
          [](tasks::ScoreSummary& s, bool skipped, double logprob, int64_t tokens, int64_t oovs,
             int64_t oov_tokens, int64_t nonfinite, double oov_logprob) {
            s.add(totals(0, skipped, logprob, tokens, oovs, oov_tokens, nonfinite, oov_logprob));
          },
          py::arg("skipped"), py::arg("logprob"), py::arg("tokens"), py::arg("oovs"), py::arg("oov_tokens"),
          py::arg("nonfinite"), py::arg("oov_logprob"), "Adds one line's totals (a LineScore's fields).")
      .def_readonly("sentences", &tasks::ScoreSummary::sentences, "lines not skipped")
      .def_readonly("skipped", &tasks::ScoreSummary::skipped)
      .def_readonly("tokens", &tasks::ScoreSummary::tokens, "scored tokens, eos included")
      .def_readonly("oovs", &tasks::ScoreSummary::oovs)
      .def_readonly("oov_tokens", &tasks::ScoreSummary::oov_tokens, "OOVs scored as unk")
      .def_readonly("nonfinite", &tasks::ScoreSummary::nonfinite)
      .def_readonly("logprob", &tasks::ScoreSummary::logprob, "natural log")
      .def_readonly("oov_logprob", &tasks::ScoreSummary::oov_logprob)
      .def_property_readonly("log10prob", [](const tasks::ScoreSummary& s) { return s.logprob / kLn10; })
      .def_property_readonly("perplexity", &tasks::ScoreSummary::perplexity, "including OOVs")
      .def_property_readonly("perplexity_excl_oov", &tasks::ScoreSummary::perplexity_excl_oov)
      .def(
          "jsonl",
          [](const tasks::ScoreSummary& s) { return jsonl(report::summary_record(sentence_view(), s)); },
          "The summary record `lstmlm score -v sentence --output-format jsonl` ends with (its newline "
          "included).");
  m.def(
      "line_jsonl",
      [](const py::handle& file, uint64_t line, bool skipped, double logprob, int64_t tokens, int64_t oovs,
         int64_t nonfinite) {
        const auto l = totals(line, skipped, logprob, tokens, oovs, 0, nonfinite, 0.0);
        return jsonl(report::line_record(sentence_view(), name_bytes(file), l, line));
      },
      py::arg("file"), py::arg("line"), py::arg("skipped"), py::arg("logprob"), py::arg("tokens"),
      py::arg("oovs"), py::arg("nonfinite"),
      "The line record `lstmlm score -v sentence --output-format jsonl` writes for a line (its newline "
      "included).");
}

}  // namespace lstmlm::py
