// Model's KenLM-style states: NullContextWrite, BeginSentenceWrite, BaseScore, and state_from_bytes (a stream
// another front end serialized).
#include <pybind11/stl.h>

#include "lstmlm/tasks/input.hpp"
#include "lstmlm/tasks/stream.hpp"
#include "lstmlm/units.hpp"
#include "py_args.hpp"
#include "py_errors.hpp"
#include "py_model.hpp"
#include "py_state.hpp"

namespace lstmlm::py {

namespace py = pybind11;

void bind_model_states(py::class_<PyModel>& cls) {
  cls.def(
         "state_from_bytes",
         [](PyModel& p, const py::bytes& data) {
           const std::string_view b = data;
           PyState s;
           static_cast<tasks::Stream&>(s) = tasks::stream_from_bytes(p.model(), b);
           s.fingerprint = p.model().fingerprint();
           return s;
         },
         py::arg("data"),
         "A State from the bytes State.to_bytes(), the C API's lstmlm_state_serialize or the server's "
         "exported "
         "session (\"bytes\", base64-decoded) wrote for this model; InputError when they are not one.")
      .def(
          "NullContextWrite",
          [](PyModel& p, PyState& s) {
            s.state = State::zeros(p.model());
            s.next.clear();
            s.fed = 0;
            s.fingerprint = p.model().fingerprint();
          },
          py::arg("state"), "Writes the zero state (no context) into `state`.")
      .def(
          "BeginSentenceWrite",
          [](PyModel& p, PyState& s) {
            const int32_t start = tasks::start_token(p.model().tokenizer());
            if (start < 0) {
              s.state = State::zeros(p.model());
              s.next.clear();
              s.fed = 0;
              s.fingerprint = p.model().fingerprint();
              return;
            }
            s = state_after(p, State::zeros(p.model()), start);
            s.fed = 1;
          },
          py::arg("state"), "Writes the state after the start token (bos, else eos) into `state`.")
      .def(
          "BaseScore",
          [](PyModel& p, const PyState& in, Text<"word"> word_in, PyState& out) {
            check_state(p.model(), in, "BaseScore");
            const std::string& word = word_in.value;
            const int32_t id =
                word == "</s>" && p.model().tokenizer().eos_id() && !p.model().vocab().find(word)
                    ? *p.model().tokenizer().eos_id()
                    : word_id(p.model(), word);
            // Copied with the GIL held: once it is released, another thread may rewrite `in` (or `out`).
            PyState after = in;
            after.fingerprint = p.model().fingerprint();
            std::vector<std::vector<float>> lp;
            {
              py::gil_scoped_release nogil;
              auto engine = p.pool().acquire();
              if (after.next.empty()) after.next = next_after(*engine, after.state);
              tasks::Stream* one = &after;
              tasks::advance(*engine, std::span<tasks::Stream* const>(&one, 1), {{id}}, &lp);
            }
            out = std::move(after);
            return lp[0][0] / kLn10;
          },
          py::arg("in_state"), py::arg("word"), py::arg("out_state"),
          "log10 p(word | in_state); writes the state after `word` into out_state (which may be in_state).");
}

}  // namespace lstmlm::py
