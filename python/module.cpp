// The compiled part of the Python module: lstmlm._lstmlm. The package (python/lstmlm/__init__.py) adds
// the KenLM-style wrappers written in Python and re-exports everything.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "lstmlm/engine.hpp"
#include "py_args.hpp"
#include "py_errors.hpp"
#include "py_model.hpp"
#include "py_records.hpp"
#include "py_state.hpp"

PYBIND11_MODULE(_lstmlm, m) {
  m.doc() = "lstmlm: LSTM language models on the CPU (docs/python.md)";
  // pybind11 reaches numpy's C API through a function-local static made on first use, whose initializer
  // imports numpy and so lets go of the GIL: two threads making their first array at once deadlock (one
  // waits for the static's guard holding the GIL, the other for the GIL inside the guard). Made here, on
  // import, it is made once, before any thread can race for it.
  pybind11::array_t<float> numpy_api_ready(0);
  lstmlm::py::register_errors(m);
  lstmlm::py::bind_state(m);
  lstmlm::py::bind_model(m);
  lstmlm::py::bind_records(m);
  lstmlm::py::bind_ngram(m);
  lstmlm::py::bind_resume(m);
  m.def(
      "kernels_for",
      [](lstmlm::py::Text<"precision"> precision) {
        return lstmlm::kernels_for(lstmlm::parse_precision(precision.value));
      },
      pybind11::arg("precision") = "fp32",
      "The kernels a Model of this precision runs on this CPU, '<precision>/<isa>'.");
  m.attr("__version__") = LSTMLM_VERSION;
}
