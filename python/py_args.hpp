// Argument conversion the bindings share, each refusal one of the module's exceptions with a one-line message
// naming the argument: text (str or UTF-8 bytes; a str that UTF-8 cannot encode is an InputError), token ids
// (integers only), bounded integers, line numbers. pybind11's own casters would raise a TypeError listing the
// signatures, or convert silently (a float id truncated).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <typeinfo>
#include <vector>

#include "lstmlm/error.hpp"

namespace lstmlm::py {

// An argument's name as a template argument (Text<"sentence">), so its caster can name it.
template <size_t N>
struct ArgName {
  char text[N];
  constexpr ArgName(const char (&s)[N]) { std::copy_n(s, N, text); }  // NOLINT: implicit by design
};

// A text argument: str (encoded as UTF-8), bytes or bytearray (taken as they are).
template <ArgName Name>
struct Text {
  std::string value;
};

// A sequence of text arguments (a list, a tuple, ...), each as Text.
template <ArgName Name>
struct TextList {
  std::vector<std::string> value;
};

// Loads str / bytes / bytearray `src` into `out`; false for any other type (pybind11 then raises its
// TypeError). A str holding a lone surrogate (which UTF-8 cannot encode) is an InputError naming `name`
// (with `[index]` when index >= 0) and the surrogate's position.
inline bool load_text(PyObject* src, std::string& out, const char* name, Py_ssize_t index = -1) {
  if (PyUnicode_Check(src)) {
    Py_ssize_t size = 0;
    if (const char* data = PyUnicode_AsUTF8AndSize(src, &size)) {
      out.assign(data, static_cast<size_t>(size));
      return true;
    }
    PyErr_Clear();
    Py_ssize_t pos = 0;
    Py_UCS4 c = 0;
    const Py_ssize_t n = PyUnicode_GetLength(src);
    for (; pos < n; ++pos) {
      c = PyUnicode_ReadChar(src, pos);
      if (c >= 0xD800 && c <= 0xDFFF) break;
    }
    char code[16];
    std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
    std::string where = name;
    if (index >= 0) where += "[" + std::to_string(index) + "]";
    throw InputError(where + " is not valid UTF-8 (lone surrogate " + code + " at position " +
                     std::to_string(pos) + "): give valid text, or the bytes");
  }
  if (PyBytes_Check(src)) {
    out.assign(PyBytes_AS_STRING(src), static_cast<size_t>(PyBytes_GET_SIZE(src)));
    return true;
  }
  if (PyByteArray_Check(src)) {
    out.assign(PyByteArray_AS_STRING(src), static_cast<size_t>(PyByteArray_GET_SIZE(src)));
    return true;
  }
  return false;
}

// What `o` is, for messages: "None", "a float", "an int", "a numpy.float64".
inline std::string a_type(PyObject* o) {
  if (o == Py_None) return "None";
  const std::string name = Py_TYPE(o)->tp_name;
  return (std::string("aeiou").find(name[0]) != std::string::npos ? "an " : "a ") + name;
}

// An integer argument in [lo, hi]: a Python int or anything with __index__ (numpy integers); a float, a
// str or an int outside the range is a UsageError "NAME must be in [lo, hi], got V".
inline int64_t int_arg(pybind11::handle v, const char* name, int64_t lo, int64_t hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!PyIndex_Check(v.ptr()))
    throw UsageError(std::string(name) + " must be an integer in " + range + ", got " + a_type(v.ptr()));
  auto i = pybind11::reinterpret_steal<pybind11::object>(PyNumber_Index(v.ptr()));
  if (!i) throw pybind11::error_already_set();
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (x == -1 && PyErr_Occurred()) throw pybind11::error_already_set();
  if (overflow != 0 || x < lo || x > hi)
    throw UsageError(std::string(name) + " must be in " + range + ", got " + std::string(pybind11::str(i)));
  return x;
}

// `v` as an unsigned 64-bit integer: false when it is not an integer or is outside [0, 2^64 - 1].
inline bool uint64_of(pybind11::handle v, uint64_t& out) {
  if (!PyIndex_Check(v.ptr())) return false;
  auto i = pybind11::reinterpret_steal<pybind11::object>(PyNumber_Index(v.ptr()));
  if (!i) throw pybind11::error_already_set();
  const unsigned long long x = PyLong_AsUnsignedLongLong(i.ptr());
  if (x == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();  // negative, or above 2^64 - 1
    return false;
  }
  out = x;
  return true;
}

inline std::string value_text(pybind11::handle v) {
  return PyIndex_Check(v.ptr()) ? std::string(pybind11::str(v)) : a_type(v.ptr());
}

// An unsigned 64-bit integer argument (a seed): UsageError "NAME must be in [0, 2^64 - 1], got V".
inline uint64_t uint_arg(pybind11::handle v, const char* name) {
  uint64_t x = 0;
  if (!uint64_of(v, x))
    throw UsageError(std::string(name) + " must be an integer in [0, " +
                     std::to_string(std::numeric_limits<uint64_t>::max()) + "], got " + value_text(v));
  return x;
}

// The line number of the first of `lines` lines: an integer >= 1 whose last line's number fits in 64 bits
// too (line numbers never wrap around).
inline uint64_t first_line_arg(pybind11::handle v, size_t lines) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const uint64_t hi = lines > 0 ? kMax - (lines - 1) : kMax;
  uint64_t x = 0;
  if (!uint64_of(v, x) || x < 1 || x > hi)
    throw UsageError("first_line must be a line number in [1, " + std::to_string(hi) + "]" +
                     (lines > 1 ? " (the last of the " + std::to_string(lines) + " lines is numbered too)"
                                : std::string()) +
                     ", got " + value_text(v));
  return x;
}

// Token ids: a sequence of Python ints or numpy integers, or a 1-D numpy integer array; each in
// [0, vocab_size). Another kind (text, floats, bools, nested sequences) is a UsageError naming `name` (and
// the element); an id out of range is an InputError "NAME[i]: ID is not a token id (the vocabulary has V)".
inline std::vector<int32_t> ids_arg(pybind11::handle obj, const char* name, int64_t vocab_size) {
  namespace py = pybind11;
  PyObject* o = obj.ptr();
  auto at = [&](size_t i) { return std::string(name) + "[" + std::to_string(i) + "]"; };
  auto out_of_range = [&](size_t i, const std::string& id) {
    return InputError(at(i) + ": " + id + " is not a token id (the vocabulary has " +
                      std::to_string(vocab_size) + ")");
  };
  std::vector<int32_t> ids;
  if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o))
    throw UsageError(std::string(name) + " must be a sequence of token ids (ints), got " + a_type(o));
  if (py::isinstance<py::array>(obj)) {
    auto a = py::reinterpret_borrow<py::array>(obj);
    const char kind = a.dtype().kind();
    if (a.ndim() != 1)
      throw UsageError(std::string(name) + " must be a 1-dimensional array of token ids, got " +
                       std::to_string(a.ndim()) + " dimensions");
    if (kind != 'i' && kind != 'u')
      throw UsageError(std::string(name) + " must hold integer token ids, got an array of dtype " +
                       std::string(py::str(a.dtype())));
    const auto n = static_cast<size_t>(a.shape(0));
    ids.reserve(n);
    if (kind == 'u') {
      auto u = py::array_t<uint64_t, py::array::forcecast>::ensure(obj);
      if (!u) throw py::error_already_set();
      for (size_t i = 0; i < n; ++i) {
        const uint64_t v = u.at(static_cast<py::ssize_t>(i));
        if (v >= static_cast<uint64_t>(vocab_size)) throw out_of_range(i, std::to_string(v));
        ids.push_back(static_cast<int32_t>(v));
      }
    } else {
      auto s = py::array_t<int64_t, py::array::forcecast>::ensure(obj);
      if (!s) throw py::error_already_set();
      for (size_t i = 0; i < n; ++i) {
        const int64_t v = s.at(static_cast<py::ssize_t>(i));
        if (v < 0 || v >= vocab_size) throw out_of_range(i, std::to_string(v));
        ids.push_back(static_cast<int32_t>(v));
      }
    }
    return ids;
  }
  if (!PySequence_Check(o))
    throw UsageError(std::string(name) + " must be a sequence of token ids (ints), got " + a_type(o));
  auto seq = py::reinterpret_steal<py::object>(PySequence_Fast(o, "not a sequence"));
  if (!seq) throw py::error_already_set();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  ids.reserve(static_cast<size_t>(n));
  for (Py_ssize_t k = 0; k < n; ++k) {
    const auto i = static_cast<size_t>(k);
    PyObject* item = PySequence_Fast_GET_ITEM(seq.ptr(), k);
    if (PyBool_Check(item) || !PyIndex_Check(item))
      throw UsageError(at(i) + " is " + a_type(item) + ", not a token id (an int)");
    auto v = py::reinterpret_steal<py::object>(PyNumber_Index(item));
    if (!v) throw py::error_already_set();
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (x == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (overflow != 0 || x < 0 || x >= vocab_size) throw out_of_range(i, std::string(py::str(v)));
    ids.push_back(static_cast<int32_t>(x));
  }
  return ids;
}

// A caster for a bound class T (the module's State, Model, LineScore) that refuses None and an instance
// whose __init__ never ran (made by T.__new__ alone, or an unpickling that failed): pybind11 would hand
// out uninitialized memory for it. Both are a UsageError; `Class` names the class, `Make` how to make one.
template <typename T, ArgName Class, ArgName Make>
class InitializedCaster : public pybind11::detail::type_caster_base<T> {
 public:
  bool load(pybind11::handle src, bool convert) {
    if (src.is_none()) throw UsageError(std::string("None where an ") + Class.text + " is expected");
    const auto* tinfo = pybind11::detail::get_type_info(typeid(T));
    if (tinfo && PyObject_TypeCheck(src.ptr(), tinfo->type)) {
      auto* inst = reinterpret_cast<pybind11::detail::instance*>(src.ptr());
      auto vh = inst->get_value_and_holder(tinfo, false);
      // (vh's bool is "the value is allocated", which pybind11 does lazily, on a first load: not the test.)
      if (vh.inst != nullptr && !vh.holder_constructed())
        throw UsageError(std::string("an ") + Class.text +
                         " made by __new__ without __init__ holds nothing: make it with " + Make.text);
    }
    return pybind11::detail::type_caster_base<T>::load(src, convert);
  }
};

}  // namespace lstmlm::py

namespace pybind11::detail {

template <lstmlm::py::ArgName N>
struct type_caster<lstmlm::py::Text<N>> {
  PYBIND11_TYPE_CASTER(lstmlm::py::Text<N>, const_name("str"));
  bool load(handle src, bool) { return lstmlm::py::load_text(src.ptr(), value.value, N.text); }
};

template <lstmlm::py::ArgName N>
struct type_caster<lstmlm::py::TextList<N>> {
  PYBIND11_TYPE_CASTER(lstmlm::py::TextList<N>, const_name("list[str]"));
  bool load(handle src, bool) {
    PyObject* o = src.ptr();
    if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o) || !PySequence_Check(o)) return false;
    auto seq = reinterpret_steal<object>(PySequence_Fast(o, "not a sequence"));
    if (!seq) {
      PyErr_Clear();
      return false;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    value.value.clear();
    value.value.resize(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!lstmlm::py::load_text(PySequence_Fast_GET_ITEM(seq.ptr(), i), value.value[static_cast<size_t>(i)],
                                 N.text, i))
        return false;
    return true;
  }
};

}  // namespace pybind11::detail
