// The compiled part of the Python module: lstmlm._lstmlm. The package (python/lstmlm/__init__.py) adds
// the KenLM-style wrappers written in Python and re-exports everything.
#include <pybind11/pybind11.h>

#include <string>

#include "lstmlm/engine.hpp"
#include "py_errors.hpp"
#include "py_model.hpp"
#include "py_state.hpp"

PYBIND11_MODULE(_lstmlm, m) {
  m.doc() = "lstmlm: LSTM language models on the CPU (docs/python.md)";
  lstmlm::py::register_errors(m);
  lstmlm::py::bind_state(m);
  lstmlm::py::bind_model(m);
  m.def(
      "kernels_for", [](const std::string& precision) { return lstmlm::kernels_for(precision); },
      pybind11::arg("precision") = "fp32",
      "The kernels a Model of this precision runs on this CPU, '<precision>/<isa>'.");
  m.attr("__version__") = LSTMLM_VERSION;
}
