// The Python exception types of the module and the translation of the library's errors into them.
#pragma once
#include <pybind11/pybind11.h>

namespace lstmlm::py {

// Defines lstmlm.Error (the base), ModelError (also an OSError: a model directory that cannot be used),
// InputError and UsageError (also ValueErrors: bad text, bad arguments) and OutputError (an OSError), and
// registers the translator: a library exception becomes one of them with the CLI's one-line message.
void register_errors(pybind11::module_& m);

// Raises lstmlm.UsageError with `message` (for checks done in the binding itself).
[[noreturn]] void throw_usage(const std::string& message);

}  // namespace lstmlm::py
