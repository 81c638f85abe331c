#include "options.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "limits.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"
#include "output.hpp"

namespace lstmlm::cli {

namespace {

std::string real_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Decimal digits with an optional '-' and nothing else: no blank, no '+' (from_chars, not strtoll).
bool parse_int(const std::string& s, int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

bool parse_real(const std::string& s, double& v) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(v);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(s->get_name());
  return names;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::vector<std::string> long_option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options())
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  return names;
}

// The long options an unknown option most likely meant: those it begins (`--pad` for --pad-to), else the
// closest by edit distance; a single-dash word (`-threads`, `-temp`) is tried as a long one. "" when
// none is close (a one-letter short option is never guessed: any other letter is one edit away).
std::string suggest_option(const std::string& name, const CLI::App& sub) {
  if (name.size() < 3) return "";
  const std::string as_long = name.compare(0, 2, "--") == 0 ? name : "-" + name;
  const auto longs = long_option_names(sub);
  std::vector<std::string> prefixed;
  for (const auto& l : longs)
    if (l.size() > as_long.size() && l.compare(0, as_long.size(), as_long) == 0) prefixed.push_back(l);
  if (std::find(longs.begin(), longs.end(), as_long) != longs.end()) return as_long;
  if (!prefixed.empty() && prefixed.size() <= 3) {
    std::string s;
    for (size_t i = 0; i < prefixed.size(); ++i)
      s += (i == 0 ? "" : i + 1 == prefixed.size() ? " or " : ", ") + prefixed[i];
    return s;
  }
  return closest(as_long, longs);
}

bool is_number(const std::string& s) {
  double v = 0;
  return parse_real(s, v);
}

// `lstmlm score MODEL < text`: a model directory given where -m belongs is read as an input file (or
// refused as an extra argument); with no -m on the command line, say where it goes.
void check_model_positional(const CLI::App& app, int argc, char** argv) {
  const std::string name = argv[1];
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    if (s->get_name() == name) sub = s;
  if (!sub) return;
  const auto longs = long_option_names(*sub);
  if (std::find(longs.begin(), longs.end(), "--model") == longs.end()) return;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.rfind("-m", 0) == 0 || a.rfind("--model", 0) == 0) return;  // -m DIR, -mDIR, --model[=]DIR
  }
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.empty() || a[0] == '-') continue;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(std::filesystem::path(a) / "config.json", ec)) continue;
    std::string fixed = "lstmlm " + name + " -m " + a;
    for (int j = 2; j < argc; ++j)
      if (j != i) fixed += " " + std::string(argv[j]);
    throw UsageError("'" + a + "' is a model directory: give it with -m, as in `" + fixed + "`");
  }
}

}  // namespace

bool parse_uint64(const std::string& s, uint64_t& v) {
  if (s.empty() || s[0] == '-') return false;  // from_chars of an unsigned refuses '-' too; said here
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

CLI::Validator uint64_value() {
  const std::string range = "[0, 2^64)";
  return CLI::Validator(
      [range](std::string& s) -> std::string {
        uint64_t v = 0;
        return parse_uint64(s, v) ? std::string() : "'" + s + "' is not an integer in " + range;
      },
      range);
}

std::string range_text(double lo, double hi, bool lo_open) {
  return std::string(lo_open ? "(" : "[") + real_text(lo) + ", " + real_text(hi) + "]";
}

CLI::Validator int_range(int64_t lo, int64_t hi) {
  std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        int64_t v = 0;
        if (!parse_int(s, v)) return "'" + s + "' is not an integer in " + range;
        if (v < lo || v > hi) return s + " is not in " + range;
        return {};
      },
      range);
}

CLI::Validator real_range(double lo, double hi, bool lo_open) {
  std::string range = range_text(lo, hi, lo_open);
  return CLI::Validator(
      [lo, hi, lo_open, range](std::string& s) -> std::string {
        double v = 0;
        if (!parse_real(s, v)) return "'" + s + "' is not a number in " + range;
        if (v < lo || v > hi || (lo_open && v == lo)) return s + " is not in " + range;
        return {};
      },
      range);
}

CLI::Option* add_model_option(CLI::App& app, std::string& dir, bool required) {
  auto* o =
      app.add_option("-m,--model", dir, "Model directory (config.json, vocab.json, weights.safetensors)");
  if (required) o->required();
  return o;
}

CLI::Option* add_threads_option(CLI::App& app, int& threads) {
  return app.add_option("-t,--threads", threads, "Engine threads; 0 = one per core")
      ->check(int_range(0, kMaxThreads))
      ->capture_default_str();
}

CLI::Option* add_oov_option(CLI::App& app, tasks::OovPolicy& oov) {
  return app
      .add_option_function<std::string>(
          "--oov", [&oov](const std::string& s) { oov = tasks::oov_choices().parse(s); },
          "OOV words when the model has no unk_token: skip or error (a model with an unk_token scores "
          "them as it: nothing to refuse, a note says so)")
      ->check(one_of(tasks::oov_choices().names()))
      ->default_str(tasks::oov_choices().name(tasks::oov_choices().fallback()));
}

CLI::Option* add_normalize_option(CLI::App& app, std::string& normalize) {
  return app
      .add_option("--normalize", normalize,
                  "Normalize each line before it is tokenized: none, lower (str.lower()), nfkc, or ccnet "
                  "(cc_net's text_normalizer.normalize: lowercase, no accents, digits to 0, its punctuation "
                  "map, no control characters)")
      ->check(one_of(tasks::normalize_choices().names()))
      ->capture_default_str();
}

void note_oov_policy(tasks::OovPolicy oov, const Model& model) {
  const auto& unk = model.config().tokenizer.unk_token;
  if (oov != tasks::OovPolicy::Error || !unk || !model.tokenizer().unk_id()) return;
  print_diagnostic("lstmlm: note: ", "--oov error does not apply: " + model.directory() +
                                         " has the unk_token '" + *unk +
                                         "', so every word has an id (an OOV is read as it and counted)");
}

CLI::Option* repeatable(CLI::Option* o) {
  return o->allow_extra_args(false)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

CLI::Option* add_file_option(CLI::App& app, std::vector<std::string>& files, const std::string& help) {
  return repeatable(app.add_option("-f,--file", files, help));
}

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (Precision p : kPrecisions) v.emplace_back(precision_name(p));
    return v;
  }();
  return names;
}

namespace {
// "'x' is not one of fp32, bf16, int8" when s is no precision name, else "".
std::string precision_problem(const std::string& s) {
  const auto& names = precision_names();
  if (std::find(names.begin(), names.end(), s) != names.end()) return {};
  return "'" + s + "' is not one of " + joined(names);
}
}  // namespace

CLI::Option* add_precision_option(CLI::App& app, Precision& precision) {
  return app
      .add_option_function<std::string>(
          "--precision", [&precision](const std::string& s) { precision = parse_precision(s); },
          "Kernel precision: fp32 (the default: the numerics contract), bf16 or int8 (opt-in, weights "
          "converted at load, fp32 accumulation and state; docs/precision.md). A precision this "
          "build or CPU lacks is an error naming the available ones")
      ->check(CLI::Validator([](std::string& s) { return precision_problem(s); }, "fp32|bf16|int8"))
      ->default_str(std::string(precision_name(precision)));
}

std::vector<Precision> precision_list(const std::string& s) {
  std::vector<Precision> out;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, ',');) {
    if (p.empty()) continue;
    if (std::string bad = precision_problem(p); !bad.empty()) throw UsageError("--precision: " + bad);
    out.push_back(parse_precision(p));
  }
  if (out.empty()) throw UsageError("--precision: needs at least one of " + joined(precision_names()));
  return out;
}

CLI::Option* add_fold_option(CLI::App& app, EmbeddingFold& fold) {
  const auto& c = tasks::fold_choices();
  return app
      .add_option_function<std::string>(
          "--fold-embedding", [&fold, &c](const std::string& s) { fold = c.parse(s); },
          "Layer 0's input per token: always a table of V x 4H floats (no product per token: faster, "
          "more memory), never (the embedding through W_ih at every step), or auto (the table when no "
          "larger than the embedding and W_ih, or at most 4 MiB; docs/architecture.md)")
      ->check(one_of(c.names()))
      ->default_str(c.name(fold));
}

EngineOptions engine_options(int threads, Precision precision, EmbeddingFold fold) {
  EngineOptions e;
  e.threads = threads;
  e.precision = precision;
  e.fold = fold;
  return e;
}

void add_window_options(CLI::App& app, WindowArgs& w) {
  w.pad_opt = app.add_option("--pad-to", w.pad_to,
                             "Before each prediction keep the last N tokens of the context and pre-pad them "
                             "with pad_id (else 0; one-hot: zero vectors) to N, run from the zero state "
                             "(Keras pad_sequences)")
                  ->check(int_range(1, kMaxPadTo));
  w.window_opt = app.add_option("--window", w.window,
                                "Before each prediction keep the last N tokens of the context, unpadded, "
                                "run from the zero state")
                     ->check(int_range(1, kMaxPadTo))
                     ->excludes(w.pad_opt);
  w.stateful_opt = app.add_flag("--stateful", w.stateful,
                                "Carry the state over the whole context (turns off a model's default "
                                "--pad-to input_length)")
                       ->excludes(w.pad_opt)
                       ->excludes(w.window_opt);
  w.pad_opt->excludes(w.window_opt)->excludes(w.stateful_opt);
  w.window_opt->excludes(w.stateful_opt);
}

tasks::WindowOptions resolve_window(const WindowArgs& w, const Model& model) {
  using tasks::WindowMode;
  std::optional<tasks::WindowOptions> given;
  if (w.pad_opt && w.pad_opt->count() > 0) given = tasks::WindowOptions{WindowMode::Pad, w.pad_to};
  if (w.window_opt && w.window_opt->count() > 0) given = tasks::WindowOptions{WindowMode::Window, w.window};
  if (w.stateful) given = tasks::WindowOptions{};
  const auto window = tasks::default_window(model, given);
  if (!given && window.windowed()) {
    const std::string len = std::to_string(window.length);
    // One short line: the choice and how to change it (--help and docs/scoring.md explain the window).
    print_diagnostic("lstmlm: note: ", "config.json input_length " + len + ": --pad-to " + len +
                                           " as Keras (--stateful or --window N to change)");
  }
  return window;
}

void warn_skipped(const Model& model, const std::string& where, const std::vector<std::string>& words) {
  for (const auto& wd : words)
    print_diagnostic("lstmlm: warning: ", where + ": '" + wd +
                                              "' is not in the vocabulary and the model has no unk_token: "
                                              "skipped (--oov error refuses it)" +
                                              tasks::oov_hint(model, wd));
}

CLI::Option* add_format_option(CLI::App& app, Format& format, const std::vector<Format>& accepted,
                               const std::string& flags) {
  std::vector<std::string> names;
  for (Format f : accepted) names.push_back(format_name(f));
  std::string help = "Output format: ";
  for (size_t i = 0; i < names.size(); ++i)
    help += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return app
      .add_option_function<std::string>(
          flags, [&format](const std::string& s) { format = parse_format(s); }, help)
      ->check(one_of(names))
      ->default_str(format_name(format));
}

void refuse_for_ngram(const WindowArgs& w, const std::vector<std::string>& mix, const std::string& boost_file,
                      const tasks::CacheOptions& cache) {
  if (w.pad_opt->count() > 0 || w.window_opt->count() > 0)
    throw UsageError("--pad-to/--window: an n-gram model has no fixed input window");
  if (!mix.empty()) throw UsageError("--mix: mixes ARPA models into a neural -m model, not into an ARPA one");
  if (!boost_file.empty()) throw UsageError("--boost: a boost file is read for a neural model's vocabulary");
  if (cache.on()) throw UsageError("--cache-window: the cache attends over a neural model's hidden states");
}

void add_cache_options(CLI::App& app, tasks::CacheOptions& cache, const std::string& over) {
  app.add_option(
         "--cache-window", cache.window,
         "Continuous cache pointer (Grave et al. 2017, awd-lstm-lm's pointer.py) over the last W tokens " +
             over + "; 0 = off (docs/mixing.md)")
      ->capture_default_str();
  app.add_option("--cache-lambda", cache.lambda, "The cache's weight in the mixture")->capture_default_str();
  app.add_option("--cache-theta", cache.theta, "The flatness of the cache's attention")
      ->capture_default_str();
}

CLI::Option* add_progress_option(CLI::App& app, std::string& mode) {
  return app
      .add_option(
          "--progress", mode,
          "Progress line on stderr: auto (when a terminal), always, never; with the share of the input "
          "read and the time left when its size is known")
      ->check(one_of({"auto", "always", "never"}))
      ->capture_default_str();
}

std::shared_ptr<const Model> load_model(const std::string& dir) {
  if (NgramModel::is_arpa(dir))
    throw UsageError("-m " + dir +
                     ": an ARPA n-gram model; this command needs a neural model directory (score, predict, "
                     "generate, info and mix-tune take an ARPA model with -m; --mix mixes one in)");
  auto model = Model::load(dir);
  for (const auto& w : model->warnings()) print_diagnostic("lstmlm: warning: ", w);
  return model;
}

namespace {
void warn_ngram(const NgramModel& model) {
  if (model.unk_added())
    print_diagnostic("lstmlm: warning: ", model.path() +
                                              ": no <unk> among its unigrams: a word that is not one gets "
                                              "log10 p = -100, as KenLM gives it");
}
}  // namespace

std::shared_ptr<const NgramModel> load_ngram(const std::string& path) {
  auto model = NgramModel::load(path);
  warn_ngram(*model);
  return model;
}

std::shared_ptr<const tasks::MixPlan> load_mix_plan(const std::vector<std::string>& specs,
                                                    const std::vector<std::string>& first_words, bool lodr,
                                                    const std::string& mode) {
  auto plan = tasks::load_mix(specs, first_words, lodr, tasks::mix_mode_choices().parse(mode));
  for (const auto& m : plan->members)
    if (m.model) warn_ngram(*m.model);
  return plan;
}

CLI::Option* add_mix_option(CLI::App& app, std::vector<std::string>& specs, const std::string& what) {
  return repeatable(app.add_option("--mix", specs,
                                   "Mix in an ARPA n-gram model or a neural word model's directory, " + what +
                                       " (linear): MODEL:WEIGHT, repeatable; -m gets 1 - the sum of the "
                                       "weights (docs/mixing.md)"));
}

CLI::Option* add_softmax_option(CLI::App& app, std::string& word, const std::string& skip) {
  return app
      .add_option("--softmax", word,
                  "full: probabilities; skip: " + skip +
                      ", no normaliser computed (for a self-normalised model; docs/scoring.md)")
      ->check(one_of(tasks::softmax_choices().names()))
      ->capture_default_str();
}

CLI::Option* add_mix_mode_option(CLI::App& app, std::string& mode) {
  return app
      .add_option(
          "--mix-mode", mode,
          "How --mix combines: linear (sum of w p) or loglinear (product of p^w, renormalized over the "
          "vocabulary)")
      ->check(one_of(tasks::mix_mode_choices().names()))
      ->capture_default_str();
}

std::shared_ptr<const tasks::MixRow> load_mix_row(const std::vector<std::string>& specs,
                                                  const std::string& mode, const Model& model) {
  if (specs.empty()) return nullptr;
  // words_of checks the model's kind before load_mix_plan reads an ARPA file.
  return std::make_shared<tasks::MixRow>(load_mix_plan(specs, tasks::NgramMix::words_of(model), false, mode),
                                         model);
}

std::vector<int> int_list(const std::string& s, const std::string& option, int64_t lo, int64_t hi) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  for (std::string p; std::getline(ss, p, ',');) {
    if (p.empty()) continue;
    int64_t v = 0;
    if (!parse_int(p, v))
      throw UsageError(option + ": expects a comma list of integers in " + range + ", got '" + s + "'");
    if (v < lo || v > hi) throw UsageError(option + ": " + p + " is not in " + range);
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw UsageError(option + ": needs at least one value");
  return out;
}

CLI::Validator one_of(std::vector<std::string> names) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return CLI::Validator(
      [names, list](std::string& s) -> std::string {
        if (std::find(names.begin(), names.end(), s) != names.end()) return {};
        const std::string guess = closest(s, names);
        return "'" + printable(s, 40) + "' is not one of " + list +
               (guess.empty() ? "" : "; did you mean " + guess + "?");
      },
      list);
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  // A typo: one edit in a short word, two or three in a longer one (a swap of two letters is two).
  size_t dashes = std::min(word.find_first_not_of('-'), word.size());
  size_t len = word.size() - dashes;
  size_t limit = len <= 3 ? 1 : std::min<size_t>(3, std::max<size_t>(2, len / 4));
  return best_d <= limit ? best : "";
}

void check_command_line(const CLI::App& app, int argc, char** argv) {
  const auto subs = subcommand_names(app);
  const std::string list = "the subcommands are " + joined(subs);
  if (argc < 2) throw UsageError("a subcommand is required; " + list);
  const std::string first = argv[1];
  if (first == "-h" || first == "--help" || first == "--help-all" || first == "--version") return;
  if (std::find(subs.begin(), subs.end(), first) != subs.end()) {
    check_model_positional(app, argc, argv);
    return;
  }
  if (first.empty() || first[0] != '-') {
    std::string guess = closest(first, subs);
    throw UsageError("unknown subcommand '" + first + "'" +
                     (guess.empty() ? "" : "; did you mean " + guess + "?") + " (" + list + ")");
  }
  // An option before the subcommand: show where it goes.
  for (int i = 2; i < argc; ++i)
    if (std::find(subs.begin(), subs.end(), std::string(argv[i])) != subs.end()) {
      std::string fixed_cmd = "lstmlm " + std::string(argv[i]);
      for (int j = 1; j < i; ++j) fixed_cmd += " " + std::string(argv[j]);
      throw UsageError("options go after the subcommand: " + first + " belongs to it, as in `" + fixed_cmd +
                       (i + 1 < argc ? " ...`" : "`"));
    }
  throw UsageError("a subcommand is required before " + first + "; " + list);
}

std::string usage_message(const CLI::App& app, const CLI::ParseError& e) {
  if (!dynamic_cast<const CLI::ExtrasError*>(&e)) return e.what();
  // The chosen subcommand's options are the candidates for an unknown option.
  const CLI::App* sub = &app;
  for (const CLI::App* s : app.get_subcommands())
    if (s->parsed()) sub = s;
  std::vector<std::string> extras = app.remaining(true);
  for (const auto& a : extras) {
    if (a.size() < 2 || a[0] != '-' || is_number(a)) continue;
    std::string name = a.substr(0, a.find('='));
    std::string guess = suggest_option(name, *sub);
    std::string where = sub == &app ? "lstmlm --help" : "lstmlm " + sub->get_name() + " --help";
    return "unknown option " + name +
           (guess.empty() ? " (" + where + " lists the options)" : "; did you mean " + guess + "?");
  }
  if (!extras.empty())
    return "unexpected argument '" + extras.front() + "'" +
           (sub == &app ? "" : " (lstmlm " + sub->get_name() + " --help shows the usage)");
  return e.what();
}

}  // namespace lstmlm::cli
