// lstmlm.State: the recurrent state of one sequence, owned by the caller as in KenLM (BaseScore reads one
// State and writes another), with the distribution of the next token it leads to.
#pragma once
#include <pybind11/pybind11.h>

#include <vector>

#include "lstmlm/engine.hpp"

namespace lstmlm::py {

struct PyState {
  State state;  // empty until BeginSentenceWrite / NullContextWrite / BaseScore writes it
  // ln p of every next token after this state (empty: not computed yet; BaseScore computes it from h).
  std::vector<float> next;
  bool written() const { return !state.h.empty(); }
  bool operator==(const PyState& o) const { return state == o.state; }
};

void bind_state(pybind11::module_& m);

}  // namespace lstmlm::py
