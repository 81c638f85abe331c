// lstmlm.State: the recurrent state of one sequence, owned by the caller as in KenLM (BaseScore reads one
// State and writes another), with the distribution of the next token it leads to.
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/stream.hpp"
#include "py_args.hpp"

namespace lstmlm::py {

// Read and written only with the GIL held: a call copies what it needs before releasing the GIL, so
// another thread rewriting the same State meanwhile changes what later calls see, never the memory a
// running call reads.
// A stream of the library (lstmlm/tasks/stream.hpp): `state` empty until BeginSentenceWrite /
// NullContextWrite / BaseScore writes it; `next` empty until computed (BaseScore computes it from h).
struct PyState : tasks::Stream {
  uint64_t fingerprint = 0;  // Model::fingerprint() of the model that wrote it; 0 while not written
  bool written() const { return !state.h.empty(); }
  bool operator==(const PyState& o) const { return state == o.state; }
};

void bind_state(pybind11::module_& m);

}  // namespace lstmlm::py

// Every State argument (self included) is checked: None, or a State whose __init__ never ran, is a
// UsageError.
namespace pybind11::detail {
template <>
class type_caster<lstmlm::py::PyState>
    : public lstmlm::py::InitializedCaster<lstmlm::py::PyState, "lstmlm.State", "lstmlm.State()"> {};
}  // namespace pybind11::detail
