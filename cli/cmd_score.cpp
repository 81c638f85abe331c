// `lstmlm score`: per-word log-probabilities, per-line totals and perplexity of text files or stdin.
#include <chrono>
#include <cmath>

#include "commands.hpp"
#include "json_text.hpp"
#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/score.hpp"
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
      logprob null when not scored), then {"type": "summary", "sentences", "skipped", "tokens", "oovs",
      "logprob", "log10prob", "perplexity", "perplexity_excl_oov"}; -v summary: the summary only.
  tsv (one table with a header): -v word: file line position token id oov logprob log10prob (one row per
      word); -v sentence: file line skipped tokens oovs logprob log10prob; -v summary: sentences skipped
      tokens oovs logprob log10prob perplexity perplexity_excl_oov.
Numbers in jsonl/tsv have 9 significant digits. Speed (tokens/s) goes to stderr, never to stdout.)";

struct Opts {
  std::string model_dir;
  std::vector<std::string> files;
  std::string verbosity = "word", format = "text", context = "sentence", oov = "skip", progress = "auto";
  bool no_eos = false, skip_empty = false, ids = false;
  int batch_size = 64, threads = 0;
};

constexpr double kLn10 = 2.302585092994045684;

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string line_record(const Opts& o, const std::string& file, const tasks::LineScore& l) {
  bool words = o.verbosity == "word";
  std::string s;
  if (o.format == "jsonl") {
    s = "{\"type\": \"line\", \"file\": " + jstr(file) + ", \"line\": " + std::to_string(l.line) +
        ", \"skipped\": " + (l.skipped ? "true" : "false") + ", \"logprob\": " + jnum(l.logprob) +
        ", \"log10prob\": " + jnum(l.logprob / kLn10) + ", \"tokens\": " + std::to_string(l.tokens) +
        ", \"oovs\": " + std::to_string(l.oovs);
    if (words) {
      s += ", \"words\": [";
      for (size_t i = 0; i < l.words.size(); ++i) {
        const auto& w = l.words[i];
        s += (i ? ", " : "");
        s += "{\"token\": " + jstr(w.token) + ", \"id\": " + std::to_string(w.id) +
             ", \"oov\": " + (w.oov ? "true" : "false") +
             ", \"logprob\": " + (w.scored ? jnum(w.logprob) : "null") +
             ", \"log10prob\": " + (w.scored ? jnum(w.logprob / kLn10) : "null") + "}";
      }
      s += "]";
    }
    return s + "}\n";
  }
  if (o.format == "tsv") {
    std::string pre = file + "\t" + std::to_string(l.line) + "\t";
    if (!words)
      return pre + (l.skipped ? "1" : "0") + "\t" + std::to_string(l.tokens) + "\t" + std::to_string(l.oovs) +
             "\t" + jnum(l.logprob) + "\t" + jnum(l.logprob / kLn10) + "\n";
    for (size_t i = 0; i < l.words.size(); ++i) {
      const auto& w = l.words[i];
      s += pre + std::to_string(i + 1) + "\t" + w.token + "\t" + std::to_string(w.id) + "\t" +
           (w.oov ? "1" : "0") + "\t" + (w.scored ? jnum(w.logprob) : "") + "\t" +
           (w.scored ? jnum(w.logprob / kLn10) : "") + "\n";
    }
    return s;
  }
  if (l.skipped) return "Skipped\n";
  if (words)
    for (const auto& w : l.words)
      s += w.token + "=" + std::to_string(w.id) + (w.oov ? "*" : "") + " " +
           (w.scored ? fixed(w.logprob, 6) : std::string("-")) + "\t";
  return s + "Total: logprob=" + fixed(l.logprob, 6) + " log10prob=" + fixed(l.logprob / kLn10, 6) +
         " tokens=" + std::to_string(l.tokens) + " oovs=" + std::to_string(l.oovs) + "\n";
}

std::string summary_record(const Opts& o, const tasks::ScoreSummary& s) {
  if (o.format == "jsonl")
    return "{\"type\": \"summary\", \"sentences\": " + std::to_string(s.sentences) +
           ", \"skipped\": " + std::to_string(s.skipped) + ", \"tokens\": " + std::to_string(s.tokens) +
           ", \"oovs\": " + std::to_string(s.oovs) + ", \"logprob\": " + jnum(s.logprob) +
           ", \"log10prob\": " + jnum(s.logprob / kLn10) + ", \"perplexity\": " + jnum(s.perplexity()) +
           ", \"perplexity_excl_oov\": " + jnum(s.perplexity_excl_oov()) + "}\n";
  if (o.format == "tsv")
    return std::to_string(s.sentences) + "\t" + std::to_string(s.skipped) + "\t" + std::to_string(s.tokens) +
           "\t" + std::to_string(s.oovs) + "\t" + jnum(s.logprob) + "\t" + jnum(s.logprob / kLn10) + "\t" +
           jnum(s.perplexity()) + "\t" + jnum(s.perplexity_excl_oov()) + "\n";
  return "Sentences:\t" + std::to_string(s.sentences) + "\nTokens:\t" + std::to_string(s.tokens) +
         "\nOOVs:\t" + std::to_string(s.oovs) + "\nPerplexity including OOVs:\t" + fixed(s.perplexity(), 4) +
         "\nPerplexity excluding OOVs:\t" + fixed(s.perplexity_excl_oov(), 4) + "\n";
}

int run(const Opts& o) {
  check_readable(o.files);
  tasks::ScoreOptions task;
  task.context = o.context == "document" ? tasks::ContextMode::Document : tasks::ContextMode::Sentence;
  task.append_eos = !o.no_eos;
  task.oov = o.oov == "error" ? tasks::OovPolicy::Error : tasks::OovPolicy::Skip;
  task.skip_empty = o.skip_empty;
  task.ids_input = o.ids;
  task.batch_size = o.batch_size;
  auto model = Model::load(o.model_dir);
  Engine engine(model, o.threads);
  tasks::Scorer scorer(engine, task);
  tasks::ScoreSummary summary;
  Output out;
  bool progress = o.progress == "always" || (o.progress == "auto" && stderr_is_terminal());
  if (o.format == "tsv") {
    if (o.verbosity == "word") out.write("file\tline\tposition\ttoken\tid\toov\tlogprob\tlog10prob\n");
    if (o.verbosity == "sentence") out.write("file\tline\tskipped\ttokens\toovs\tlogprob\tlog10prob\n");
    if (o.verbosity == "summary")
      out.write("sentences\tskipped\ttokens\toovs\tlogprob\tlog10prob\tperplexity\tperplexity_excl_oov\n");
  }
  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // Blocks bound memory: a file of any size streams through 4096 lines at a time.
  const size_t block = 4096;
  LineReader in(o.files);
  std::vector<std::string> lines;
  std::string text;
  uint64_t first = 0;
  while (in.next_file()) {
    while (in.next_block(lines, block, first)) {
      auto scores = scorer.score(lines, in.source(), first);
      text.clear();
      for (const auto& l : scores) {
        summary.add(l);
        if (o.verbosity != "summary") text += line_record(o, in.source(), l);
      }
      out.write(text);
      if (progress)
        std::fprintf(stderr, "\rscore: %lld lines, %lld tokens, %.0f tokens/s ",
                     static_cast<long long>(summary.sentences + summary.skipped),
                     static_cast<long long>(summary.tokens), static_cast<double>(summary.tokens) / seconds());
    }
  }
  if (progress) std::fputc('\n', stderr);
  if (o.format != "tsv" || o.verbosity == "summary") out.write(summary_record(o, summary));
  out.flush();
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
  s.app->add_option("-m,--model", o->model_dir, "Model directory")->required();
  s.app->add_option("files", o->files, "Input files ('-' or none: stdin)");
  s.app->add_option("-v,--verbosity", o->verbosity, "word, sentence or summary")
      ->check(CLI::IsMember({"word", "sentence", "summary"}))
      ->capture_default_str();
  s.app->add_option("--output-format", o->format, "text, jsonl or tsv")
      ->check(CLI::IsMember({"text", "jsonl", "tsv"}))
      ->capture_default_str();
  s.app->add_option("--context", o->context, "sentence (state reset per line) or document")
      ->check(CLI::IsMember({"sentence", "document"}))
      ->capture_default_str();
  s.app->add_flag("--no-eos", o->no_eos, "Do not append eos_token to each line");
  s.app->add_option("--oov", o->oov, "OOV words when the model has no unk_token: skip or error")
      ->check(CLI::IsMember({"skip", "error"}))
      ->capture_default_str();
  s.app->add_flag("--skip-empty", o->skip_empty, "Do not score empty lines (their record says skipped)");
  s.app->add_flag("--ids", o->ids, "Lines are whitespace-separated token ids");
  s.app->add_option("--batch-size", o->batch_size, "Lines per engine batch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  s.app->add_option("--threads", o->threads, "Threads (0 = one per core)")->check(CLI::NonNegativeNumber);
  s.app
      ->add_option("--progress", o->progress,
                   "Progress line on stderr: auto (when a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  s.run = [o]() -> int { return run(*o); };
  return s;
}

}  // namespace lstmlm::cli
