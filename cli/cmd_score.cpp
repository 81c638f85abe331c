// `lstmlm score`: per-word log-probabilities, per-line totals and perplexity of text files or stdin.
#include <chrono>
#include <cmath>
#include <map>

#include "commands.hpp"
#include "emit.hpp"
#include "limits.hpp"
#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/score.hpp"
#include "options.hpp"
#include "output.hpp"

namespace lstmlm::cli {

namespace {

constexpr const char* kHelp =
    R"(Input: UTF-8 text, one sentence per line (a BOM at the start of a file and CRLF line ends are
accepted). Invalid UTF-8 is an error naming the file and line (exit 1); nothing is replaced.
Tokenization follows the model's config.json: lowercase (exactly Python's str.lower()), every character
of `filters` replaced by a space (Keras), split on whitespace as Python's str.split() (word models) or one
token per code point (char models; filtered characters deleted). With --ids each line is token ids.

Sentence mode (default): state reset per line; the first token is predicted from bos_token, else
eos_token, else it is context only (not scored); eos_token is appended unless --no-eos. An empty line is
scored as just eos (--skip-empty: not scored, record marked skipped). Document mode (--context document):
one stream across lines and files, each line followed by eos (PyTorch word_language_model), its first token
predicted as in sentence mode. OOV words are scored as unk_token and counted; without unk_token they are
skipped (not fed, not scored, counted; --oov error refuses them).
Perplexity (KenLM query): including OOVs = exp(-sum ln p / tokens), tokens = scored tokens incl. eos;
excluding OOVs = exp(-(sum ln p - ln p of OOVs) / (tokens - scored OOVs)).

Output: logprob = natural log, log10prob = log10; one record per input line, in input order.
  text, -v word: per line "TOKEN=ID LOGPROB" per word, tab-separated ('*' after ID marks an OOV, LOGPROB
      is '-' when not scored), then "Total: logprob=L log10prob=L10 tokens=N oovs=K"; "Skipped" for a
      skipped line. -v sentence: only the Total part. After all lines (and alone with -v summary):
      "Sentences: N", "Tokens: N", "OOVs: N", "Perplexity including OOVs: P", "Perplexity excluding OOVs: P".
  jsonl: one object per line {"type": "line", "file", "line", "skipped", "logprob", "log10prob", "tokens",
      "oovs", "words": [{"token", "id", "oov", "logprob", "log10prob"}]} ("words" at -v word only;
      logprob null when not scored or not finite; "nonfinite": N is added to a line and to the summary
      when N of its scored tokens have a NaN or infinite log-prob, which text and tsv print as nan/-inf), then {"type": "summary", "sentences", "skipped", "tokens", "oovs",
      "logprob", "log10prob", "perplexity", "perplexity_excl_oov"}; -v summary: the summary only.
  tsv (one table with a header): -v word: file line position token id oov logprob log10prob (one row per
      word); -v sentence: file line skipped tokens oovs logprob log10prob; -v summary: sentences skipped
      tokens oovs logprob log10prob perplexity perplexity_excl_oov.
Numbers in jsonl/tsv have 9 significant digits. Speed (tokens/s) goes to stderr, never to stdout.)";

enum class Verbosity { Word, Sentence, Summary };

struct Opts {
  std::string model_dir;
  std::vector<std::string> files;
  Verbosity verbosity = Verbosity::Word;
  Format format = Format::Text;
  std::string context = "sentence", progress = "auto";
  tasks::OovPolicy oov = tasks::OovPolicy::Skip;
  bool no_eos = false, skip_empty = false, ids = false;
  int batch_size = 64, threads = 0;
};

constexpr double kLn10 = 2.302585092994045684;

Record line_record(const Opts& o, const std::string& file, const tasks::LineScore& l) {
  Record r{"score.line",
           {{"type", Value::str("line")},
            {"file", Value::str(file)},
            {"line", Value::uinteger(l.line)},
            {"skipped", Value::boolean(l.skipped)},
            {"logprob", Value::num9(l.logprob)},
            {"log10prob", Value::num9(l.logprob / kLn10)},
            {"tokens", Value::integer(l.tokens)},
            {"oovs", Value::integer(l.oovs)}}};
  // Only when present, so every ordinary record keeps its fields (a NaN weight is the only known cause).
  if (l.nonfinite && o.format == Format::Jsonl)
    r.fields.push_back({"nonfinite", Value::integer(l.nonfinite)});
  if (o.verbosity == Verbosity::Word) {
    std::vector<Value> words;
    words.reserve(l.words.size());
    for (const auto& w : l.words)
      words.push_back(
          Value::of_record({{"token", Value::str(w.token)},
                            {"id", Value::integer(w.id)},
                            {"oov", Value::boolean(w.oov)},
                            {"logprob", w.scored ? Value::num9(w.logprob) : Value::null()},
                            {"log10prob", w.scored ? Value::num9(w.logprob / kLn10) : Value::null()}}));
    r.fields.push_back({"words", Value::of_list(std::move(words))});
  }
  return r;
}

Record summary_record(const Opts& o, const tasks::ScoreSummary& s) {
  Record r{"score.summary",
           {{"type", Value::str("summary")},
            {"sentences", Value::integer(s.sentences)},
            {"skipped", Value::integer(s.skipped)},
            {"tokens", Value::integer(s.tokens)},
            {"oovs", Value::integer(s.oovs)},
            {"logprob", Value::num9(s.logprob)},
            {"log10prob", Value::num9(s.logprob / kLn10)},
            {"perplexity", Value::num9(s.perplexity())},
            {"perplexity_excl_oov", Value::num9(s.perplexity_excl_oov())}}};
  if (s.nonfinite && o.format == Format::Jsonl)
    r.fields.push_back({"nonfinite", Value::integer(s.nonfinite)});
  return r;
}

// The table view (tsv): one row per word, per line, or the summary alone.
Table table(Verbosity v) {
  switch (v) {
    case Verbosity::Word:
      return {"score.line", {"file", "line", "position", "token", "id", "oov", "logprob", "log10prob"}};
    case Verbosity::Sentence:
      return {"score.line", {"file", "line", "skipped", "tokens", "oovs", "logprob", "log10prob"}};
    case Verbosity::Summary:
      break;
  }
  return {"score.summary",
          {"sentences", "skipped", "tokens", "oovs", "logprob", "log10prob", "perplexity",
           "perplexity_excl_oov"}};
}

int run(const Opts& o) {
  check_readable(o.files);
  tasks::ScoreOptions task;
  task.context = o.context == "document" ? tasks::ContextMode::Document : tasks::ContextMode::Sentence;
  task.append_eos = !o.no_eos;
  task.oov = o.oov;
  task.skip_empty = o.skip_empty;
  task.ids_input = o.ids;
  task.batch_size = o.batch_size;
  auto model = load_model(o.model_dir);
  Engine engine(model, o.threads);
  tasks::Scorer scorer(engine, task);
  tasks::ScoreSummary summary;
  Emitter out(o.format);
  bool progress = o.progress == "always" || (o.progress == "auto" && stderr_is_terminal());
  out.begin(table(o.verbosity));
  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // Blocks bound memory: a file of any size streams through 4096 lines at a time.
  const size_t block = 4096;
  LineReader in(o.files);
  std::vector<std::string> lines;
  uint64_t first = 0;
  std::string first_nonfinite;  // FILE:LINE of the first line with a non-finite log-prob
  while (in.next_file()) {
    auto take = [&](const std::vector<tasks::LineScore>& scores) {
      for (const auto& l : scores) {
        summary.add(l);
        if (l.nonfinite && first_nonfinite.empty())
          first_nonfinite = in.source() + ":" + std::to_string(l.line);
        if (o.verbosity != Verbosity::Summary) out.emit(line_record(o, in.source(), l));
      }
      out.write_pending();
    };
    while (in.next_block(lines, block, first)) {
      try {
        take(scorer.score(lines, in.source(), first));
      } catch (const InputError&) {
        // A bad line in the block (tokenizing fails before any state changes): the lines before it are
        // scored one by one and written, so the error loses nothing, then the bad line throws again.
        // Batch composition and chunking do not change a score (tests/engine_invariance_test.cpp).
        for (size_t i = 0; i < lines.size(); ++i) take(scorer.score({lines[i]}, in.source(), first + i));
        throw;
      }
      if (progress)
        std::fprintf(stderr, "\rscore: %lld lines, %lld tokens, %.0f tokens/s ",
                     static_cast<long long>(summary.sentences + summary.skipped),
                     static_cast<long long>(summary.tokens), static_cast<double>(summary.tokens) / seconds());
    }
  }
  if (progress) std::fputc('\n', stderr);
  out.emit(summary_record(o, summary));
  out.end();
  if (summary.nonfinite)
    print_diagnostic("lstmlm: warning: ",
                     std::to_string(summary.nonfinite) +
                         (summary.nonfinite == 1 ? " scored token has" : " scored tokens have") +
                         " a non-finite log-probability (the first on " + first_nonfinite +
                         "): the totals and perplexities are not finite; the model's weights hold NaN or "
                         "infinite values");
  std::fprintf(stderr, "lstmlm score: %lld tokens in %.3f s (%.0f tokens/s)\n",
               static_cast<long long>(summary.tokens), seconds(),
               static_cast<double>(summary.tokens) / seconds());
  return 0;
}

}  // namespace

Subcommand setup_score(CLI::App& parent) {
  auto o = std::make_shared<Opts>();
  Subcommand s;
  s.app = parent.add_subcommand("score", "Per-word log-probabilities and perplexity of text");
  s.app->footer(kHelp);
  add_model_option(*s.app, o->model_dir);
  s.app->add_option("files", o->files, "Input files ('-' or none: stdin)");
  s.app->add_option("-v,--verbosity", o->verbosity, "word, sentence or summary")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Verbosity>{
          {"word", Verbosity::Word}, {"sentence", Verbosity::Sentence}, {"summary", Verbosity::Summary}}))
      ->default_str("word");
  add_format_option(*s.app, o->format, {Format::Text, Format::Jsonl, Format::Tsv});
  s.app->add_option("--context", o->context, "sentence (state reset per line) or document")
      ->check(CLI::IsMember({"sentence", "document"}))
      ->capture_default_str();
  s.app->add_flag("--no-eos", o->no_eos, "Do not append eos_token to each line");
  add_oov_option(*s.app, o->oov);
  s.app->add_flag("--skip-empty", o->skip_empty, "Do not score empty lines (their record says skipped)");
  s.app->add_flag("--ids", o->ids, "Lines are whitespace-separated token ids");
  s.app->add_option("--batch-size", o->batch_size, "Lines per engine batch")
      ->check(int_range(1, kMaxBatch))
      ->capture_default_str();
  add_threads_option(*s.app, o->threads);
  s.app
      ->add_option("--progress", o->progress,
                   "Progress line on stderr: auto (when a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  s.run = [o]() -> int { return run(*o); };
  return s;
}

}  // namespace lstmlm::cli
