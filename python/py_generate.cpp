// Model.generate: `lstmlm generate`'s sampler, interruptible with Ctrl-C.
#include <pybind11/stl.h>

#include <chrono>
#include <limits>

#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/sampler.hpp"
#include "py_args.hpp"
#include "py_errors.hpp"
#include "py_model.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {}  // namespace

void bind_generate(py::class_<PyModel>& cls) {
  cls.def(
      "_generate",
      [](PyModel& p, Text<"prompt"> prompt, const py::object& max_tokens, float temperature,
         const py::object& top_k, float top_p, float min_p, float repeat_penalty,
         const py::object& repeat_last_n, const py::object& seed, const py::object& num_samples,
         std::optional<bool> stop_at_eos, Text<"oov"> oov, const py::object& boost, const py::object& mix) {
        // The CLI's ranges (lstmlm generate -n, --top-k, --repeat-last-n, --num-samples).
        tasks::GenerateOptions g;
        g.prompt = prompt.value;
        g.max_tokens = static_cast<int>(int_arg(max_tokens, "max_tokens", 0, tasks::kMaxGenerateTokens));
        g.sampler = {
            temperature,
            static_cast<int>(int_arg(top_k, "top_k", 0, kMaxVocabSize)),
            top_p,
            min_p,
            repeat_penalty,
            static_cast<int>(int_arg(repeat_last_n, "repeat_last_n", -1, tasks::kMaxGenerateTokens))};
        g.num_samples = static_cast<int>(int_arg(num_samples, "num_samples", 1, tasks::kMaxSamples));
        g.seed = seed.is_none() ? tasks::random_seed() : uint_arg(seed, "seed");
        g.stop_at_eos = stop_at_eos;
        g.window = p.options().window;
        g.oov = oov_policy(oov.value);
        g.boost = boost_arg(p, boost);
        g.mix = mix_arg(p, mix);
        g.validate();
        tasks::GenerateResult r;
        {
          py::gil_scoped_release nogil;
          auto engine = p.pool().acquire();
          SignalCheck check;
          r = generate(*engine, g, [&check](int, const tasks::GeneratedToken&) { check(); });
        }
        py::list texts;
        for (const auto& s : r.samples)
          texts.append(tasks::sample_text(p.model().tokenizer(), prompt.value, s.ids()));
        return py::make_tuple(texts, g.seed);
      },
      py::arg("prompt"), py::arg("max_tokens"), py::arg("temperature"), py::arg("top_k"), py::arg("top_p"),
      py::arg("min_p"), py::arg("repeat_penalty"), py::arg("repeat_last_n"), py::arg("seed"),
      py::arg("num_samples"), py::arg("stop_at_eos"), py::arg("oov"), py::arg("boost") = py::none(),
      py::arg("mix") = py::none());
}

}  // namespace lstmlm::py
