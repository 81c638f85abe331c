#include "py_state.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>

#include "py_errors.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {

py::bytes floats_bytes(const std::vector<float>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::vector<float> bytes_floats(const py::bytes& b) {
  const std::string s = b;
  if (s.size() % sizeof(float) != 0) throw_usage("State: a pickled vector is not a whole number of floats");
  std::vector<float> v(s.size() / sizeof(float));
  if (!s.empty()) std::memcpy(v.data(), s.data(), s.size());
  return v;
}

py::list layers(const std::vector<std::vector<float>>& per_layer) {
  py::list out;
  for (const auto& v : per_layer)
    out.append(py::array_t<float>(static_cast<py::ssize_t>(v.size()), v.data()));
  return out;
}

// Pickle format 1: (1, [h bytes per layer], [c bytes per layer], next bytes), floats in native byte order.
constexpr int kPickleVersion = 1;

}  // namespace

void bind_state(py::module_& m) {
  py::class_<PyState>(m, "State",
                      R"(The recurrent state of one sequence (per layer h and c), as KenLM's State.

Empty until Model.BeginSentenceWrite, Model.NullContextWrite or Model.BaseScore writes it. Copyable
(copy.copy, copy.deepcopy) and picklable; states compare equal when their h and c are equal.)")
      .def(py::init<>())
      .def_property_readonly(
          "h", [](const PyState& s) { return layers(s.state.h); },
          "Per layer, the output h (a copy, float32).")
      .def_property_readonly(
          "c", [](const PyState& s) { return layers(s.state.c); }, "Per layer, the cell c (a copy, float32).")
      .def_property_readonly("written", &PyState::written, "False until a Model method has written it.")
      .def("__eq__", [](const PyState& a, const PyState& b) { return a == b; })
      .def("__copy__", [](const PyState& s) { return PyState(s); })
      .def("__deepcopy__", [](const PyState& s, py::dict) { return PyState(s); })
      .def("__repr__",
           [](const PyState& s) {
             return s.written() ? "<lstmlm.State of " + std::to_string(s.state.h.size()) + " layers>"
                                : std::string("<lstmlm.State (not written)>");
           })
      .def(py::pickle(
          [](const PyState& s) {
            py::list h, c;
            for (const auto& v : s.state.h) h.append(floats_bytes(v));
            for (const auto& v : s.state.c) c.append(floats_bytes(v));
            return py::make_tuple(kPickleVersion, h, c, floats_bytes(s.next));
          },
          [](const py::tuple& t) {
            if (t.size() != 4 || t[0].cast<int>() != kPickleVersion)
              throw_usage("State: a pickle of another lstmlm version (expected format " +
                          std::to_string(kPickleVersion) + ")");
            PyState s;
            for (auto v : t[1].cast<py::list>()) s.state.h.push_back(bytes_floats(v.cast<py::bytes>()));
            for (auto v : t[2].cast<py::list>()) s.state.c.push_back(bytes_floats(v.cast<py::bytes>()));
            if (s.state.h.size() != s.state.c.size())
              throw_usage("State: a pickle with h and c of different depths");
            s.next = bytes_floats(t[3].cast<py::bytes>());
            return s;
          }));
}

}  // namespace lstmlm::py
