#include <pybind11/stl.h>

#include <cmath>
#include <optional>

#include "lstmlm/error.hpp"
#include "lstmlm/report/jsonl.hpp"
#include "lstmlm/tasks/jsonl.hpp"
#include "lstmlm/tasks/request.hpp"
#include "py_args.hpp"
#include "py_model.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {

// `s` as a str, bytes that are not UTF-8 decoded with `errors` ("backslashreplace": a message quotes them as
// \xNN; "surrogateescape": a kept line, re-encoded with it, is its input bytes, though a parsed JSON object
// holds only UTF-8).
py::str str_of(const std::string& s, const char* errors) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), errors);
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

py::object result(const std::string& input, const tasks::JsonlDocument& d) {
  using S = tasks::JsonlDocument::Status;
  if (d.status == S::Kept)
    return py::make_tuple("kept", str_of(report::jsonl_document(input, d), "surrogateescape"));
  if (d.status == S::Filtered) return py::make_tuple("filtered", "");
  return py::make_tuple("error", str_of(d.error, "backslashreplace"));
}

// A perplexity bound: a number >= 0 (inf allowed), as --min-perplexity / --max-perplexity.
void check_bound(const std::optional<double>& b, const char* name) {
  if (b && !(*b >= 0))
    throw UsageError(std::string(name) + " must be a perplexity >= 0, got " +
                     std::string(py::str(py::float_(*b))));
}

}  // namespace

void bind_jsonl(py::class_<PyModel>& cls) {
  cls.def(
      "score_jsonl",
      [](PyModel& p, TextList<"lines"> lines_in, Text<"source"> source, const py::object& first_line_in,
         Text<"text_field"> text_field, std::optional<double> min_ppl, std::optional<double> max_ppl,
         Text<"context"> context, bool bos, bool eos, Text<"oov"> oov, Text<"normalize"> normalize) {
        std::vector<std::string>& lines = lines_in.value;
        const uint64_t first_line = first_line_arg(first_line_in, lines.size());
        check_bound(min_ppl, "min_perplexity");
        check_bound(max_ppl, "max_perplexity");
        tasks::JsonlOptions o;
        o.text_field = text_field.value;
        o.score = score_options(p, bos, eos, context.value, oov.value, false);
        o.score.normalize = tasks::normalize_choices().parse(normalize.value);
        o.min_perplexity = min_ppl;
        o.max_perplexity = max_ppl;
        std::vector<tasks::JsonlDocument> docs;
        {
          py::gil_scoped_release nogil;
          auto engine = p.pool().acquire();
          tasks::JsonlScorer scorer(*engine, o);
          docs = scorer.score(lines, source.value, first_line);
        }
        py::list out;
        for (size_t i = 0; i < docs.size(); ++i) out.append(result(lines[i], docs[i]));
        return out;
      },
      py::arg("lines"), py::arg("source") = "-", py::arg("first_line") = 1, py::kw_only(),
      py::arg("text_field") = "text", py::arg("min_perplexity") = py::none(),
      py::arg("max_perplexity") = py::none(), py::arg("context") = "sentence", py::arg("bos") = true,
      py::arg("eos") = true, py::arg("oov") = "skip", py::arg("normalize") = "none");
}

}  // namespace lstmlm::py
