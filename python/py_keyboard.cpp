// Model's keyboard: predict (next tokens, completions of a typed prefix), load_boost and the Boost it gives,
// and complete (a keystroke after a State).
#include <pybind11/stl.h>

#include <limits>

#include "lstmlm/tasks/keyboard.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "lstmlm/tasks/request.hpp"
#include "py_args.hpp"
#include "py_errors.hpp"
#include "py_model.hpp"
#include "py_state.hpp"

namespace lstmlm::py {

namespace py = pybind11;

void bind_keyboard(py::module_& m, py::class_<PyModel>& cls) {
  py::class_<PyBoost>(m, "Boost",
                      "Words and phrases with an additive log-prob (Model.load_boost); applied by predict, "
                      "generate and complete when passed as boost=")
      .def("__len__", [](const PyBoost& b) { return b.boost ? b.boost->size() : 0; })
      .def_property_readonly("longest", [](const PyBoost& b) { return b.boost ? b.boost->longest() : 0; })
      .def("__repr__", [](const PyBoost& b) {
        return "<lstmlm.Boost " + std::to_string(b.boost ? b.boost->size() : 0) + " entries>";
      });
  cls.def(
      "_predict",
      [](PyModel& p, const py::object& context_in, const py::object& top, Text<"prefix"> prefix,
         const py::object& boost, const py::object& mix, Text<"softmax"> softmax,
         const py::object& cache_window, double cache_lambda, double cache_theta) {
        // Text (tokenized, as `lstmlm predict`), or token ids fed as given (as `predict --ids`).
        std::string context;
        const bool ids = !load_text(context_in.ptr(), context, "context");
        if (ids) {
          for (int32_t id : ids_arg(context_in, "context", p.model().vocab_size())) {
            if (!context.empty()) context += ' ';
            context += std::to_string(id);
          }
        }
        tasks::PredictOptions o;
        o.top = static_cast<int>(int_arg(top, "top", 0, std::numeric_limits<int>::max()));
        o.window = p.options().window;
        o.ids_input = ids;
        o.prefix = prefix.value;
        if (!o.prefix.empty() && p.model().tokenizer().traits().completion == Completion::WordIndex)
          o.completer = p.completer();
        o.boost = boost_arg(p, boost);
        o.mix = mix_arg(p, mix);
        o.softmax = tasks::softmax_choices().parse(softmax.value);
        o.cache = cache_arg(cache_window, cache_lambda, cache_theta);
        std::vector<tasks::Prediction> r;
        {
          py::gil_scoped_release nogil;
          auto engine = p.pool().acquire();
          r = tasks::predict(*engine, {context}, o, "<context>", 1);
        }
        py::list out;
        for (const auto& c : r[0].top) out.append(py::make_tuple(c.token, c.id, c.prob, c.logprob));
        return out;
      },
      py::arg("context"), py::arg("top"), py::arg("prefix") = "", py::arg("boost") = py::none(),
      py::arg("mix") = py::none(), py::arg("softmax") = "full", py::kw_only(), LSTMLM_PY_CACHE_ARGS);
  cls.def(
         "load_boost",
         [](PyModel& p, const py::object& source) {
           PyBoost b;
           b.model = p.shared_model();
           std::string path;
           if (load_text(source.ptr(), path, "source")) {
             py::gil_scoped_release nogil;
             b.boost = std::make_shared<tasks::Boost>(tasks::Boost::load(p.model(), path));
           } else {
             std::vector<std::string> lines;
             for (const auto& item : py::iter(source)) {
               std::string l;
               if (!load_text(item.ptr(), l, "source", static_cast<Py_ssize_t>(lines.size())))
                 throw_usage("load_boost: give a file path or a sequence of 'PHRASE\\tBONUS' strings");
               lines.push_back(std::move(l));
             }
             b.boost = std::make_shared<tasks::Boost>(tasks::Boost::parse(p.model(), lines, "<boost>"));
           }
           return b;
         },
         py::arg("source"),
         "A Boost from a file path, or from a sequence of 'PHRASE\\tBONUS' lines (bonus: natural log).")
      .def(
          "_complete",
          [](PyModel& p, const PyState& s, Text<"prefix"> prefix, const py::object& top,
             const py::object& boost, const py::object& history) {
            check_state(p.model(), s, "complete");
            const int n = static_cast<int>(int_arg(top, "top", 0, std::numeric_limits<int>::max()));
            auto b = boost_arg(p, boost);
            std::vector<int32_t> hist;
            if (!history.is_none()) hist = ids_arg(history, "history", p.model().vocab_size());
            const State from = s.state;
            std::vector<float> next = s.next;
            const bool chars = p.model().tokenizer().traits().completion == Completion::CharBeam;
            if (!chars) tasks::check_completion(p.model(), Completion::WordIndex, prefix.value);
            std::vector<tasks::Candidate> r;
            auto completer = chars ? nullptr : p.completer();
            {
              py::gil_scoped_release nogil;
              auto engine = p.pool().acquire();
              if (next.empty()) next = next_after(*engine, from);
              if (b) b->apply(hist, next.data(), p.model().vocab_size());
              if (!chars) {
                r = completer->complete(next.data(), prefix.value, n);
              } else {
                // The typed characters fed after the state, then completions to the next word boundary.
                State at = from;
                for (const auto& t : p.model().tokenizer().tokenize(prefix.value)) {
                  if (t.id < 0) continue;
                  State after;
                  engine->step(at, t.id, after, next);
                  at = std::move(after);
                }
                SignalCheck check;  // Ctrl-C stops the beam search between two steps
                r = tasks::complete_chars(*engine, at, next, n <= 0 ? 64 : n, 24, [&check] { check(); });
                for (auto& c : r) c.token = prefix.value + c.token;
              }
            }
            py::list out;
            for (const auto& c : r) out.append(py::make_tuple(c.token, c.id, c.prob, c.logprob));
            return out;
          },
          py::arg("state"), py::arg("prefix"), py::arg("top"), py::arg("boost") = py::none(),
          py::arg("history") = py::none());
}

}  // namespace lstmlm::py
