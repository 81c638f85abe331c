#include <pybind11/stl.h>

#include <optional>

#include "lstmlm/tasks/jsonl.hpp"
#include "py_model.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {

py::object kept_or_filtered(const tasks::JsonlDocument& d) {
  using S = tasks::JsonlDocument::Status;
  if (d.status == S::Kept) return py::make_tuple("kept", d.line);
  if (d.status == S::Filtered) return py::make_tuple("filtered", "");
  return py::make_tuple("error", d.error);
}

}  // namespace

void bind_jsonl(py::class_<PyModel>& cls) {
  cls.def(
      "score_jsonl",
      [](PyModel& p, const std::vector<std::string>& lines, const std::string& source, uint64_t first_line,
         const std::string& text_field, std::optional<double> min_ppl, std::optional<double> max_ppl,
         const std::string& context, bool bos, bool eos, const std::string& oov) {
        tasks::JsonlOptions o;
        o.text_field = text_field;
        o.score = score_options(p, bos, eos, context, oov, false);
        o.min_perplexity = min_ppl;
        o.max_perplexity = max_ppl;
        std::vector<tasks::JsonlDocument> docs;
        {
          py::gil_scoped_release nogil;
          auto engine = p.pool().acquire();
          tasks::JsonlScorer scorer(*engine, o);
          docs = scorer.score(lines, source, first_line);
        }
        py::list out;
        for (const auto& d : docs) out.append(kept_or_filtered(d));
        return out;
      },
      py::arg("lines"), py::arg("source") = "-", py::arg("first_line") = 1, py::kw_only(),
      py::arg("text_field") = "text", py::arg("min_perplexity") = py::none(),
      py::arg("max_perplexity") = py::none(), py::arg("context") = "sentence", py::arg("bos") = true,
      py::arg("eos") = true, py::arg("oov") = "skip");
}

}  // namespace lstmlm::py
