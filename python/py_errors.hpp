// The Python exception types of the module and the translation of the library's errors into them.
#pragma once
#include <pybind11/pybind11.h>

#include <chrono>

namespace lstmlm::py {

// Defines lstmlm.Error (the base), ModelError (also an OSError: a model directory that cannot be used),
// InputError and UsageError (also ValueErrors: bad text, bad arguments) and OutputError (an OSError), and
// registers the translator: a library exception becomes one of them with the CLI's one-line message.
void register_errors(pybind11::module_& m);

// Lets Ctrl-C stop a long call (generate, a character model's completions): every 20 ms of work, at a step,
// the GIL is taken back for a moment to run Python's signal handlers; an exception one raises
// (KeyboardInterrupt) ends the call.
class SignalCheck {
 public:
  void operator()() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(20)) return;
    last_ = now;
    pybind11::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Raises lstmlm.UsageError with `message` (for checks done in the binding itself).
[[noreturn]] void throw_usage(const std::string& message);

}  // namespace lstmlm::py
