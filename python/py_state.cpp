#include "py_state.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>

#include "py_errors.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {

// Pickle format 1, still read: (1, [h bytes per layer], [c bytes per layer], next bytes), floats in native
// byte order. Pickles are written as (2, the serialized stream).
constexpr int kPickleVersion = 1;

// Refusals of a pickle that is not one this version wrote: UsageError "State: ...".
[[noreturn]] void bad_pickle(const std::string& what) {
  throw_usage("State: not a pickle of an lstmlm State of format 1 or 2: " + what);
}

std::vector<float> bytes_floats(py::handle b, const std::string& what) {
  if (!PyBytes_Check(b.ptr())) bad_pickle(what + " is " + a_type(b.ptr()) + ", not bytes");
  const auto size = static_cast<size_t>(PyBytes_GET_SIZE(b.ptr()));
  if (size % sizeof(float) != 0) bad_pickle(what + " is not a whole number of floats");
  std::vector<float> v(size / sizeof(float));
  if (size > 0) std::memcpy(v.data(), PyBytes_AS_STRING(b.ptr()), size);
  return v;
}

// A list (or tuple) of per-layer float vectors.
std::vector<std::vector<float>> layers_of(py::handle seq, const char* what) {
  if (!PyList_Check(seq.ptr()) && !PyTuple_Check(seq.ptr()))
    bad_pickle(std::string(what) + " is " + a_type(seq.ptr()) + ", not a list");
  std::vector<std::vector<float>> out;
  size_t k = 0;
  for (auto v : seq) out.push_back(bytes_floats(v, std::string(what) + "[" + std::to_string(k++) + "]"));
  return out;
}

py::list layers(const std::vector<std::vector<float>>& per_layer) {
  py::list out;
  for (const auto& v : per_layer)
    out.append(py::array_t<float>(static_cast<py::ssize_t>(v.size()), v.data()));
  return out;
}

// Format 1 pickles (before the serialized stream): (1, [h bytes per layer], [c bytes per layer], next bytes).
PyState from_pickle_1(const py::tuple& t) {
  if (t.size() != 4) bad_pickle("a tuple of " + std::to_string(t.size()) + " items, not 2 or 4");
  PyObject* version = t[0].ptr();
  if (!PyLong_CheckExact(version))
    bad_pickle("its format field is " + a_type(version) + ", not the int " + std::to_string(kPickleVersion));
  if (PyLong_AsLong(version) != kPickleVersion || PyErr_Occurred()) {
    PyErr_Clear();
    bad_pickle("its format is " + std::string(py::str(t[0])) + " (another lstmlm version)");
  }
  PyState s;
  s.state.h = layers_of(t[1], "h");
  s.state.c = layers_of(t[2], "c");
  if (s.state.h.size() != s.state.c.size()) bad_pickle("h and c of different depths");
  for (size_t l = 0; l < s.state.h.size(); ++l)
    if (s.state.h[l].empty()) bad_pickle("a layer without h");
  s.next = bytes_floats(t[3], "next");
  return s;
}

// Format 2 pickles: (2, the serialized stream), read without its model (a Model method checks it on use).
PyState from_pickle_bytes(const py::tuple& t) {
  PyObject* version = t[0].ptr();
  if (!PyLong_CheckExact(version) || PyLong_AsLong(version) != long(tasks::kStreamFormat) ||
      PyErr_Occurred()) {
    PyErr_Clear();
    bad_pickle("its format is " + std::string(py::str(t[0])) + " (another lstmlm version)");
  }
  if (!PyBytes_Check(t[1].ptr())) bad_pickle("its bytes are " + a_type(t[1].ptr()) + ", not bytes");
  const std::string_view b(PyBytes_AS_STRING(t[1].ptr()), static_cast<size_t>(PyBytes_GET_SIZE(t[1].ptr())));
  PyState s;
  if (b.empty()) return s;  // a State never written
  auto read = tasks::read_stream_bytes(b);
  static_cast<tasks::Stream&>(s) = std::move(read.stream);
  s.fingerprint = read.fingerprint;
  return s;
}

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
      .def("__eq__",
           [](const PyState& a, const py::object& b) -> py::object {
             if (!py::isinstance<PyState>(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::bool_(a == b.cast<const PyState&>());
           })
      .def("__copy__", [](const PyState& s) { return PyState(s); })
      .def("__deepcopy__", [](const PyState& s, py::dict) { return PyState(s); })
      .def("__repr__",
           [](const PyState& s) {
             return s.written() ? "<lstmlm.State of " + std::to_string(s.state.h.size()) + " layers>"
                                : std::string("<lstmlm.State (not written)>");
           })
      .def(
          "to_bytes",
          [](const PyState& s) {
            if (!s.written()) throw_usage("State.to_bytes: the State has not been written");
            const std::string b = tasks::stream_bytes(s, s.fingerprint);
            return py::bytes(b.data(), b.size());
          },
          "The serialized stream (docs/c-api.md): the bytes lstmlm_state_serialize and the server's exported "
          "sessions hold; Model.state_from_bytes reads them back.")
      .def_property_readonly(
          "tokens", [](const PyState& s) { return s.fed; },
          "Tokens fed since the stream began (the start token "
          "included).")
      .def(py::pickle(
          [](const PyState& s) -> py::object {  // an object: __setstate__ checks what it is given
            if (!s.written()) return py::make_tuple(tasks::kStreamFormat, py::bytes());
            const std::string b = tasks::stream_bytes(s, s.fingerprint);
            return py::make_tuple(tasks::kStreamFormat, py::bytes(b.data(), b.size()));
          },
          [](const py::object& o) {
            if (!PyTuple_Check(o.ptr()))
              bad_pickle("the pickled value is " + a_type(o.ptr()) + ", not a tuple");
            const auto t = py::reinterpret_borrow<py::tuple>(o);
            if (t.size() == 2) return from_pickle_bytes(t);
            return from_pickle_1(t);
          }));
}

}  // namespace lstmlm::py
