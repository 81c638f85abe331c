// `lstmlm mix-tune`: the mixture weights of -m models that minimize the perplexity of held-out text (SRILM's
// compute-best-mix), by EM on the models' per-token probabilities (tasks/mix.hpp).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "emit.hpp"
#include "limits.hpp"
#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/ngram.hpp"
#include "lstmlm/report/mix.hpp"
#include "lstmlm/tasks/mix.hpp"
#include "lstmlm/tasks/ngram_score.hpp"
#include "lstmlm/tasks/score.hpp"
#include "options.hpp"

namespace lstmlm::cli {
namespace mix_tune_cmd {

const char* const kHelp = R"(
The first -m model tokenizes the text (a neural word model or an ARPA file); the others (ARPA files or
neural word models) score its words, mixed per token as `score --mix` mixes them (docs/mixing.md: a word a model lacks gets its
share of that model's unk mass). EM from equal weights: each iteration sets a model's weight to the mean over
the dev tokens of its share of the mixture's probability, until no weight moves by more than 1e-7 or after
--max-iterations.

Output (text): one line per iteration "iteration N<TAB>weights W1 W2 ...<TAB>perplexity P" (the weights that
iteration used and the dev perplexity with them), "alone<TAB>MODEL<TAB>perplexity P" per model, then
"weights<TAB>W1 W2 ..." and "perplexity<TAB>P". jsonl: records of type iteration, model, and a last one of type
result with "weights" (one per -m model, in the order given), "perplexity" and "tokens". To use the weights:
score -m FIRST --mix SECOND:W2 --mix THIRD:W3 (FIRST gets W1 = 1 - the others).
)";

struct Opts {
  std::vector<std::string> models;
  std::string dev;
  std::string context = "sentence", normalize = "none";
  tasks::OovPolicy oov = tasks::OovPolicy::Skip;
  bool no_eos = false, no_bos = false, skip_empty = false, ids = false;
  int batch_size = 64, threads = 0, max_iterations = 100;
  Format format = Format::Text;
};

int run(const Opts& o) {
  if (o.models.size() < 2)
    throw UsageError("-m: give at least two models to mix (the first tokenizes, the others score its words)");
  check_readable({o.dev}, "--dev");
  tasks::ScoreOptions task = line_options(o);
  task.add_start = !o.no_bos;
  const std::string& first = o.models[0];
  std::shared_ptr<const Model> model;
  std::shared_ptr<const NgramModel> arpa;
  std::unique_ptr<Engine> engine;
  std::optional<tasks::Scorer> neural;
  std::optional<tasks::NgramScorer> ngram;
  if (NgramModel::is_arpa(first)) {
    arpa = load_ngram(first);
    ngram.emplace(arpa, task);
  } else {
    model = load_model(first);
    if (!model->tokenizer().traits().tokens_are_words)
      throw UsageError("-m " + first + ": mixing needs a word model (an n-gram model scores words); it has " +
                       model->tokenizer().traits().name + " tokens");
    note_oov_policy(o.oov, *model);
    task.window = resolve_window({}, *model);
    engine = std::make_unique<Engine>(model, engine_options(o.threads, Precision::Fp32));
    neural.emplace(*engine, task);
  }
  // The others score the first one's words, as --mix members (their weights are what EM finds).
  std::vector<tasks::MixPlan::Member> members;
  for (size_t i = 1; i < o.models.size(); ++i) {
    const std::string& path = o.models[i];
    if (NgramModel::is_arpa(path)) {
      members.push_back({load_ngram(path), nullptr, 0.0, 1, path});
      continue;
    }
    auto other = load_model(path);
    if (!other->tokenizer().traits().tokens_are_words)
      throw UsageError("-m " + path + ": mixing needs a word model (an n-gram model scores words); it has " +
                       other->tokenizer().traits().name + " tokens");
    members.push_back({nullptr, std::move(other), 0.0, 1, path});
  }
  tasks::NgramMix mix(
      std::make_shared<const tasks::MixPlan>(
          std::move(members), arpa ? tasks::NgramMix::words_of(*arpa) : tasks::NgramMix::words_of(*model)),
      task, model.get());
  std::vector<double> probs;
  LineReader in({o.dev});
  std::vector<std::string> lines;
  std::vector<tasks::LineEnd> ends;
  uint64_t first_line = 0;
  while (in.next_file())
    while (in.next_block(lines, 4096, first_line, &ends)) {
      auto scores = neural ? neural->score(lines, in.source(), first_line, ends)
                           : ngram->score(lines, in.source(), first_line);
      mix.probabilities(scores, probs);
      check_interrupted();
    }
  const size_t k = mix.models();
  if (probs.empty())
    throw InputError(o.dev + ": no scored token (the text is empty, or every word was skipped)");
  const auto iterations = tasks::mix_em(probs, k, o.max_iterations);
  Emitter out(o.format);
  for (size_t i = 0; i < iterations.size(); ++i)
    out.emit(report::mix_iteration_record(static_cast<int>(i), iterations[i]));
  for (size_t j = 0; j < k; ++j)
    out.emit(report::mix_model_record(o.models[j], tasks::perplexity_of(probs, k, j)));
  out.emit(report::mix_result_record(o.models, iterations.back(), static_cast<int64_t>(probs.size() / k)));
  out.end();
  return 0;
}

}  // namespace mix_tune_cmd

Subcommand setup_mix_tune(CLI::App& parent) {
  using namespace mix_tune_cmd;
  auto o = std::make_shared<Opts>();
  Subcommand s;
  s.app =
      parent.add_subcommand("mix-tune", "Mixture weights that minimize the perplexity of held-out text (EM)");
  s.app->footer(kHelp);
  repeatable(s.app->add_option("-m,--model", o->models,
                               "A model to mix (repeatable; a model directory or an ARPA file): the first "
                               "tokenizes, the others score its words"))
      ->required();
  s.app->add_option("--dev", o->dev, "The held-out text, one sentence per line")->required();
  s.app->add_option("--context", o->context, "sentence (state reset per line) or document, as score")
      ->check(one_of(tasks::context_choices().names()))
      ->capture_default_str();
  s.app->add_flag("--no-bos", o->no_bos, "No start token, as score --no-bos");
  s.app->add_flag("--no-eos", o->no_eos, "Do not append a line end, as score --no-eos");
  add_oov_option(*s.app, o->oov);
  s.app->add_flag("--skip-empty", o->skip_empty, "Do not score empty lines");
  add_normalize_option(*s.app, o->normalize);
  s.app->add_option("--max-iterations", o->max_iterations, "EM iterations at most")
      ->check(int_range(1, 100000))
      ->capture_default_str();
  add_format_option(*s.app, o->format, {Format::Text, Format::Jsonl});
  add_threads_option(*s.app, o->threads);
  s.run = [o]() -> int { return run(*o); };
  return s;
}

}  // namespace lstmlm::cli
