// Model.generate: `lstmlm generate`'s sampler, interruptible with Ctrl-C.
#include <pybind11/stl.h>

#include <chrono>
#include <limits>

#include "lstmlm/tasks/beam.hpp"
#include "lstmlm/tasks/constraint.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/logit_bias.hpp"
#include "lstmlm/tasks/sampler.hpp"
#include "py_args.hpp"
#include "py_errors.hpp"
#include "py_model.hpp"

namespace lstmlm::py {

namespace py = pybind11;

namespace {

// logit_bias ({token or id: value}), allowed_words (a list of words), regex and stop (a list of strings):
// the generate keywords of biasing, constraints and stop strings, into `g` (after g.stop_at_eos is set).
void search_args(PyModel& p, tasks::GenerateOptions& g, const py::object& logit_bias,
                 const py::object& allowed_words, const py::object& regex, const py::object& stop) {
  const Model& model = p.model();
  if (!logit_bias.is_none()) {
    if (!py::isinstance<py::dict>(logit_bias))
      throw UsageError("logit_bias must be a dict {token or id: value}, got " + a_type(logit_bias.ptr()));
    std::vector<std::pair<std::string, double>> pairs;
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(logit_bias)) {
      const std::string token = py::isinstance<py::str>(k) ? k.cast<std::string>() : value_text(k);
      if (!py::isinstance<py::float_>(v) && !PyIndex_Check(v.ptr()))
        throw UsageError("logit_bias: the value of '" + token + "' must be a number, got " + a_type(v.ptr()));
      pairs.emplace_back(token, v.cast<double>());
    }
    if (!pairs.empty())
      g.bias = std::make_shared<tasks::LogitBias>(tasks::LogitBias::from_pairs(model, pairs));
  }
  tasks::ConstraintSpec spec;
  if (!allowed_words.is_none())
    spec.allowed =
        tasks::Constraint::allowed_ids(model, allowed_words.cast<std::vector<std::string>>(), "the list");
  if (!regex.is_none()) spec.regex = regex.cast<std::string>();
  if (spec.allowed || !spec.regex.empty())
    g.constraint = tasks::Constraint::create(model, spec, g.end_token(model));
  if (!stop.is_none()) {
    if (py::isinstance<py::str>(stop))
      g.stop = {stop.cast<std::string>()};
    else
      g.stop = stop.cast<std::vector<std::string>>();
  }
}

// What generate and beam search read alike: the line end, the model's window, the OOV policy, the boost and
// the mixture, the biases and constraints; then the options are checked.
void common_args(PyModel& p, tasks::GenerateOptions& g, std::optional<bool> stop_at_eos,
                 const std::string& oov, const py::object& boost, const py::object& mix,
                 const py::object& logit_bias, const py::object& allowed_words, const py::object& regex,
                 const py::object& stop) {
  g.stop_at_eos = stop_at_eos;
  g.window = p.options().window;
  g.oov = oov_policy(oov);
  g.boost = boost_arg(p, boost);
  g.mix = mix_arg(p, mix);
  search_args(p, g, logit_bias, allowed_words, regex, stop);
  g.validate();
}

}  // namespace

void bind_generate(py::class_<PyModel>& cls) {
  cls.def(
      "_generate",
      [](PyModel& p, Text<"prompt"> prompt, const py::object& max_tokens, float temperature,
         const py::object& top_k, float top_p, float min_p, float repeat_penalty,
         const py::object& repeat_last_n, const py::object& seed, const py::object& num_samples,
         std::optional<bool> stop_at_eos, Text<"oov"> oov, const py::object& boost, const py::object& mix,
         const py::object& logit_bias, const py::object& allowed_words, const py::object& regex,
         const py::object& stop, const py::object& cache_window, double cache_lambda, double cache_theta) {
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
        common_args(p, g, stop_at_eos, oov.value, boost, mix, logit_bias, allowed_words, regex, stop);
        g.cache = cache_arg(cache_window, cache_lambda, cache_theta);
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
      py::arg("mix") = py::none(), py::arg("logit_bias") = py::none(), py::arg("allowed_words") = py::none(),
      py::arg("regex") = py::none(), py::arg("stop") = py::none(), py::kw_only(), LSTMLM_PY_CACHE_ARGS);
  cls.def(
      "_beam_search",
      [](PyModel& p, Text<"prompt"> prompt, const py::object& max_tokens, const py::object& beam_size,
         const py::object& n_best, float length_penalty, const py::object& no_repeat_ngram,
         std::optional<bool> stop_at_eos, Text<"oov"> oov, const py::object& boost, const py::object& mix,
         const py::object& logit_bias, const py::object& allowed_words, const py::object& regex,
         const py::object& stop, const py::object& cache_window, double cache_lambda, double cache_theta) {
        tasks::GenerateOptions g;
        g.prompt = prompt.value;
        g.max_tokens = static_cast<int>(int_arg(max_tokens, "max_tokens", 0, tasks::kMaxGenerateTokens));
        g.beam.beam_size = static_cast<int>(int_arg(beam_size, "beam_size", 1, tasks::kMaxBeamSize));
        g.beam.n_best = static_cast<int>(int_arg(n_best, "n_best", 1, tasks::kMaxBeamSize));
        g.beam.length_penalty = length_penalty;
        g.beam.no_repeat_ngram =
            static_cast<int>(int_arg(no_repeat_ngram, "no_repeat_ngram", 0, tasks::kMaxGenerateTokens));
        common_args(p, g, stop_at_eos, oov.value, boost, mix, logit_bias, allowed_words, regex, stop);
        g.cache =
            cache_arg(cache_window, cache_lambda, cache_theta);  // refused with a beam: said, not ignored
        tasks::BeamResult r;
        {
          py::gil_scoped_release nogil;
          auto engine = p.pool().acquire();
          SignalCheck check;
          r = tasks::beam_search(*engine, g, [&check] { check(); });
        }
        py::list out;
        const Tokenizer& tok = p.model().tokenizer();
        for (const auto& h : r.hypotheses) {
          py::list lps;
          for (const auto& t : h.tokens) lps.append(t.logprob);
          out.append(py::make_tuple(tasks::sample_text(tok, prompt.value, h.ids()), h.ids(), h.total_logprob,
                                    h.score, lps, h.stopped_at_eos));
        }
        return out;
      },
      py::arg("prompt"), py::arg("max_tokens"), py::arg("beam_size"), py::arg("n_best"),
      py::arg("length_penalty"), py::arg("no_repeat_ngram"), py::arg("stop_at_eos"), py::arg("oov"),
      py::arg("boost") = py::none(), py::arg("mix") = py::none(), py::arg("logit_bias") = py::none(),
      py::arg("allowed_words") = py::none(), py::arg("regex") = py::none(), py::arg("stop") = py::none(),
      py::kw_only(), LSTMLM_PY_CACHE_ARGS);
}

}  // namespace lstmlm::py
