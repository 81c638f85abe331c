#include "py_errors.hpp"

#include <string>

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::py {

namespace {

// Created once, on import, and kept for the life of the interpreter (the module is never unloaded).
PyObject* g_model_error = nullptr;
PyObject* g_input_error = nullptr;
PyObject* g_usage_error = nullptr;
PyObject* g_output_error = nullptr;

PyObject* new_type(const char* name, const char* doc, PyObject* bases) {
  PyObject* t = PyErr_NewExceptionWithDoc(name, doc, bases, nullptr);
  if (!t) throw pybind11::error_already_set();
  return t;
}

// A message may quote the bytes of the input, invalid UTF-8 included: they stay visible as \xNN escapes
// rather than making the message itself undecodable.
void raise(PyObject* type, const std::string& message) {
  PyObject* text =
      PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "backslashreplace");
  if (!text) return;  // the decoding error stays set
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

}  // namespace

void throw_usage(const std::string& message) { throw UsageError(message); }

void register_errors(pybind11::module_& m) {
  PyObject* base = new_type("lstmlm.Error", "Base class of the errors lstmlm raises.", PyExc_Exception);
  auto pair = [&](PyObject* other) {
    PyObject* t = PyTuple_Pack(2, base, other);
    if (!t) throw pybind11::error_already_set();
    return t;
  };
  PyObject* os_bases = pair(PyExc_OSError);
  PyObject* value_bases = pair(PyExc_ValueError);
  g_model_error =
      new_type("lstmlm.ModelError",
               "A model directory that cannot be used; the message names the file and the field.", os_bases);
  g_output_error = new_type("lstmlm.OutputError", "Writing an output failed.", os_bases);
  g_input_error =
      new_type("lstmlm.InputError",
               "Text that cannot be scored as asked (invalid UTF-8, an OOV word under oov='error', "
               "a bad JSON document).",
               value_bases);
  g_usage_error =
      new_type("lstmlm.UsageError", "An argument the model or the engine cannot take.", value_bases);
  Py_DECREF(os_bases);
  Py_DECREF(value_bases);
  m.attr("Error") = pybind11::handle(base);
  m.attr("ModelError") = pybind11::handle(g_model_error);
  m.attr("InputError") = pybind11::handle(g_input_error);
  m.attr("UsageError") = pybind11::handle(g_usage_error);
  m.attr("OutputError") = pybind11::handle(g_output_error);
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ModelError& e) {
      raise(g_model_error, printable(e.text()));
    } catch (const InputError& e) {
      raise(g_input_error, printable(e.message()));
    } catch (const UsageError& e) {
      raise(g_usage_error, e.spelled([](const std::string& key) { return key; }));  // Python's keyword
    } catch (const OutputError& e) {
      raise(g_output_error, e.message());
    }
  });
}

}  // namespace lstmlm::py
