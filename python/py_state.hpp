// lstmlm.State: the recurrent state of one sequence, owned by the caller as in KenLM (BaseScore reads one
// State and writes another), with the distribution of the next token it leads to.
#pragma once
#include <pybind11/pybind11.h>

#include <vector>

#include "lstmlm/engine.hpp"
#include "py_args.hpp"

namespace lstmlm::py {

// Read and written only with the GIL held: a call copies what it needs before releasing the GIL, so
// another thread rewriting the same State meanwhile changes what later calls see, never the memory a
// running call reads.
struct PyState {
  State state;  // empty until BeginSentenceWrite / NullContextWrite / BaseScore writes it
  // ln p of every next token after this state (empty: not computed yet; BaseScore computes it from h).
  std::vector<float> next;
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
