// CLI plumbing shared by every subcommand: the common options (-m/--model, --threads, --oov,
// --output-format), numeric ranges with readable messages, loading a model (its warnings printed), and
// the checks main runs on the command line before any subcommand starts.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emit.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/ngram.hpp"
#include "lstmlm/tasks/input.hpp"
#include "lstmlm/tasks/mix.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/tasks/score.hpp"
#include "lstmlm/tasks/window.hpp"

namespace lstmlm::cli {

// "[lo, hi]" for messages and help.
std::string range_text(double lo, double hi, bool lo_open = false);

// Validators: an integer (a real) in [lo, hi] (lo_open: (lo, hi]). The message names the value and the
// range: "--pad-to: 0 is not in [1, 1000000]".
CLI::Validator int_range(int64_t lo, int64_t hi);
CLI::Validator real_range(double lo, double hi, bool lo_open = false);
// Integers are decimal digits with an optional '-' only: a blank or a '+' is refused ("' 7' is not an
// integer in [0, 2^64)"). parse_uint64 also refuses '-'; uint64_value() is its validator.
bool parse_uint64(const std::string& s, uint64_t& v);
CLI::Validator uint64_value();

CLI::Option* add_model_option(CLI::App& app, std::string& dir, bool required = true);
// -t/--threads N (llama.cpp's -t) on every subcommand that runs the engine.
CLI::Option* add_threads_option(CLI::App& app, int& threads);
CLI::Option* add_oov_option(CLI::App& app, tasks::OovPolicy& oov);
// --normalize none|lower|nfkc|ccnet (lstmlm/normalize.hpp), kept as its name for line_options.
CLI::Option* add_normalize_option(CLI::App& app, std::string& normalize);
// --oov error on a model with an unk_token has nothing to refuse (every word has an id): one note on stderr
// says so, instead of ignoring the option silently.
void note_oov_policy(tasks::OovPolicy oov, const Model& model);
// A repeatable option (a std::vector): exactly one value per occurrence, so a positional after it is not
// taken as a second value (`--weight ac=0.1 nb.tsv` reads nb.tsv).
CLI::Option* repeatable(CLI::Option* o);
// -f/--file FILE (repeatable, KenLM's and llama.cpp's -f): an input file, read before the positional ones.
CLI::Option* add_file_option(CLI::App& app, std::vector<std::string>& files, const std::string& help);
// The precisions --precision accepts (docs/precision.md): fp32 (the default), bf16, int8. Whether this
// build and CPU have one is the engine's answer (a UsageError naming what is available).
const std::vector<std::string>& precision_names();
// --precision NAME for score, predict, generate and fidelity; a name not in precision_names() is a usage
// error listing them.
CLI::Option* add_precision_option(CLI::App& app, Precision& precision);
// bench's --precision comma list, each name checked as above ("--precision: 'fp16' is not one of ...").
std::vector<Precision> precision_list(const std::string& s);
// --fold-embedding auto|always|never (tasks::fold_choices): layer 0's input term as a table per token or
// the embedding through W_ih at every step.
CLI::Option* add_fold_option(CLI::App& app, EmbeddingFold& fold);
// The engine of a subcommand: its --threads, --precision and --fold-embedding, the rest the defaults.
EngineOptions engine_options(int threads, Precision precision, EmbeddingFold fold = EmbeddingFold::Auto);
// --pad-to N, --window N, --stateful (mutually exclusive), for score, predict and generate.
struct WindowArgs {
  int pad_to = 0, window = 0;
  bool stateful = false;
  CLI::Option *pad_opt = nullptr, *window_opt = nullptr, *stateful_opt = nullptr;
};
void add_window_options(CLI::App& app, WindowArgs& w);
// predict and generate with -m FILE.arpa: the options only a neural model takes (a window, --mix into it, a
// boost file read against its vocabulary, the cache) are refused, one UsageError naming the first given.
void refuse_for_ngram(const WindowArgs& w, const std::vector<std::string>& mix, const std::string& boost_file,
                      const tasks::CacheOptions& cache);
// The window of the run: the option given, else --pad-to input_length when the model's config.json has
// one (with a one-line note on stderr saying so and how to override), else stateful.
tasks::WindowOptions resolve_window(const WindowArgs& w, const Model& model);
// The line conventions score and fidelity share (--context, --no-eos, --oov, --skip-empty, --ids,
// --batch-size, --normalize), from a subcommand's options with those members.
template <class Opts>
tasks::ScoreOptions line_options(const Opts& o) {
  tasks::ScoreOptions t;
  t.context = tasks::context_choices().parse(o.context);
  t.append_eos = !o.no_eos;
  t.oov = o.oov;
  t.skip_empty = o.skip_empty;
  t.ids_input = o.ids;
  t.batch_size = o.batch_size;
  t.normalize = tasks::normalize_choices().parse(o.normalize);
  return t;
}
// One stderr warning line per OOV word skipped in a context (`where`: "prompt", "argument:2", ...).
void warn_skipped(const Model& model, const std::string& where, const std::vector<std::string>& words);

// --output-format NAME (or another flag name) from the registered formats the subcommand accepts.
CLI::Option* add_format_option(CLI::App& app, Format& format, const std::vector<Format>& accepted,
                               const std::string& flags = "--output-format");

// --progress auto|always|never: a progress line on stderr (cli/progress.hpp), by default only on a terminal.
CLI::Option* add_progress_option(CLI::App& app, std::string& mode);

// Model::load, then one "lstmlm: warning: ..." line on stderr per loader warning.
std::shared_ptr<const Model> load_model(const std::string& dir);
// An ARPA n-gram model (a file where -m takes a model directory), its warnings printed.
std::shared_ptr<const NgramModel> load_ngram(const std::string& path);
// --mix specs as a mixture (tasks::load_mix), each model's warnings printed; `mode` a --mix-mode word.
std::shared_ptr<const tasks::MixPlan> load_mix_plan(const std::vector<std::string>& specs,
                                                    const std::vector<std::string>& first_words,
                                                    bool lodr = false, const std::string& mode = "linear");
// --mix-mode linear|loglinear (tasks::mix_mode_choices).
CLI::Option* add_mix_mode_option(CLI::App& app, std::string& mode);
// --softmax full|skip (tasks::softmax_choices); `skip` says what skipping it gives.
CLI::Option* add_softmax_option(CLI::App& app, std::string& word, const std::string& skip);
// --mix MODEL:WEIGHT (repeatable); `what` says what is mixed ("per token", "each step's distribution").
CLI::Option* add_mix_option(CLI::App& app, std::vector<std::string>& specs, const std::string& what);
// --cache-window, --cache-lambda, --cache-theta (tasks::CacheOptions); `over` says what the cache reads.
void add_cache_options(CLI::App& app, tasks::CacheOptions& cache, const std::string& over);
// predict's and generate's --mix: the mixture over `model`'s ids (tasks::MixRow); null without specs.
std::shared_ptr<const tasks::MixRow> load_mix_row(const std::vector<std::string>& specs,
                                                  const std::string& mode, const Model& model);

// Integers of a comma list ("1,2,8"), each checked against [lo, hi]; `option` names it in messages.
std::vector<int> int_list(const std::string& s, const std::string& option, int64_t lo, int64_t hi);

// The candidate closest to `word` by edit distance, when close enough to be a likely typo; else "".
std::string closest(const std::string& word, const std::vector<std::string>& candidates);
// An option's word checked against its words (the request vocabulary's names()): "'doc' is not one of
// sentence, document; did you mean document?" after the option's name, never CLI11's "doc not in
// {sentence,document}".
CLI::Validator one_of(std::vector<std::string> names);

// Checks main runs before CLI11 parses: an unknown subcommand, options before the subcommand. Throws
// UsageError with a readable message.
void check_command_line(const CLI::App& app, int argc, char** argv);
// After a CLI11 parse error: a clearer message when one can be given (did-you-mean for an unknown option),
// else the CLI11 message.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e);

}  // namespace lstmlm::cli
