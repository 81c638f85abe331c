// lstmlm.ScoreSummary and lstmlm.line_jsonl: the library's score totals and records (report layer).
#pragma once
#include <pybind11/pybind11.h>

namespace lstmlm::py {

void bind_records(pybind11::module_& m);
// lstmlm.NgramModel's compiled part (py_ngram.cpp).
void bind_ngram(pybind11::module_& m);
// The shards and resume directory of lstmlm.dask (python/py_resume.cpp).
void bind_resume(pybind11::module_& m);

}  // namespace lstmlm::py
