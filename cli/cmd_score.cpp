// `lstmlm score`: per-word log-probabilities, per-line totals and perplexity of text files or stdin.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "commands.hpp"
#include "emit.hpp"
#include "limits.hpp"
#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/ngram.hpp"
#include "lstmlm/report/score.hpp"
#include "lstmlm/tasks/mix.hpp"
#include "lstmlm/tasks/ngram_score.hpp"
#include "lstmlm/tasks/score.hpp"
#include "options.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "score_jsonl.hpp"

namespace lstmlm::cli {

using report::line_record;
using report::ngram_layout;
using report::score_table;
using report::ScoreView;
using report::StreamPos;
using report::summary_record;
using report::Units;
using report::Verbosity;

namespace score_cmd {

constexpr const char* kHelp =
    R"(Input: UTF-8 text, one sentence per line (a BOM at the start of a file and CRLF line ends are
accepted). Invalid UTF-8 is an error naming the file and line (exit 1); nothing is replaced.
Tokenization follows the model's config.json: lowercase (exactly Python's str.lower()), every character
of `filters` replaced by the split character, then (word models) split on `split` exactly as Keras'
text_to_word_sequence does when the config has one (only that character separates words; empty pieces
dropped), else on any whitespace as Python's str.split(); char models: one token per code point
(filtered characters deleted). With --ids each line is token ids.

Sentence mode (default): state reset per line; the first token is predicted from bos_token, else
eos_token, else (or with --no-bos) it is context only (not scored); the model's eos_token, if it has
one, is appended and scored unless --no-eos. A model without eos gets nothing appended (the line's end is not scored; a char
model's "\n" is not fed in sentence mode). An empty line is scored as just its line end, so as nothing
without eos (--skip-empty: not scored, record marked skipped). Document mode (--context document): one
stream across lines and files, its first token predicted as in sentence mode, each line followed by its
line end, scored like any token: eos (PyTorch word_language_model), or "\n" instead for a char model
whose vocabulary holds "\n" (char-rnn trains on the text's characters, newlines included: a CRLF is
fed as "\r" "\n" when the vocabulary has "\r", a last line without a line break gets nothing), or
nothing for a model with neither. --no-eos appends no line end in either mode. OOV words are scored as
unk_token and counted; without unk_token they are skipped (not fed, not scored, counted; --oov error
refuses them; a capitalised word against a lowercase-only vocabulary gets one warning naming the fix).
Perplexity (KenLM query): including OOVs = exp(-sum ln p / tokens), tokens = scored tokens incl. eos;
excluding OOVs = exp(-(sum ln p - ln p of OOVs) / (tokens - scored OOVs)).

Output: logprob = natural log, log10prob = log10; one record per input line, in input order.
  text, -v word: per line "TOKEN=ID LOGPROB" per word, tab-separated: KenLM query's layout, but LOGPROB is
      the natural log ln p (KenLM prints log10: --units log10, or --output-format kenlm for its whole
      layout); '*' after ID marks an OOV; LOGPROB is "context" for a token that is only context (a line's
      first token when the model has no start token, or --no-bos) and "skipped" for a skipped OOV; then
      "Total: logprob=L log10prob=L10 tokens=N oovs=K", which names the units; "Skipped" for a
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
  lmzoo: lm-zoo's get-surprisals table: header "sentence_id token_id token surprisal", tab-separated, one
      row per token: sentence_id = the line's 1-based position in the whole input (all files, skipped lines
      counted), token_id = the token's 1-based position in its line, surprisal = -log2 p in bits (empty
      when not scored); eos rows included (--no-eos: none); then entropy and rank columns when asked for.
      No summary. Only with -v word; --units, when given, must be bits.
  kenlm: KenLM query's layout, log10: per word "WORD=ID LENGTH LOG10PROB" + tab (-v word), per line
      "Total: LOG10 OOV: N" (-v word, sentence), then "Perplexity including OOVs:", "Perplexity excluding
      OOVs:", "OOVs:", "Tokens:" (tab after the colon). ID: the model's id, 0 (KenLM's <unk>) for an OOV;
      eos is written </s>; LENGTH: the tokens of context the LSTM has seen (the start token included) + 1,
      0 for a token not scored (then LOG10PROB 0). A skipped line gives "Total: 0 OOV: 0".
  srilm: SRILM ngram -ppl's layout, log10, -v word|sentence|summary = -debug 2|1|0: per sentence the
      sentence, "\tp( W | PREV ...) \t= [Ngram] P [ LOG10 ]" per token (-v word; N as kenlm's LENGTH, OOV:
      "[OOV] 0 [ -inf ]"), "S sentences, N words, K OOVs", "0 zeroprobs, logprob= L ppl= P ppl1= P1" and a
      blank line; per input file "file F: " and the same two lines. N words exclude </s>; OOVs (scored as
      unk or skipped) are excluded from L: ppl = 10^(-L/(N-K+S)), ppl1 = 10^(-L/(N-K)); 7 digits.
  rnnlm: the RNNLM toolkit's `rnnlm -test FILE -debug 2` layout: "ID\tP\tWORD" per word (-v word; P to 10
      decimals; "-1\t0\t\tOOV" for a word outside the vocabulary), then per input file "test log
      probability: L" (log10, the scored words) and "PPL net: P" (P = 10^(-L / scored words)), as %f.
      kenlm, srilm and rnnlm: --units log10 only; no --entropy, --rank or --aggregate words.
--softmax skip (a self-normalised model): every score is the target's logit, bias + W[target] . h, no
      normaliser computed (only the target's row of the output layer is read); perplexities are then of
      exp(logit). Each record says so: "softmax": "skip" in jsonl and json, a softmax column in the tables,
      "softmax=skip" on text's Total lines and "Softmax: skip" after its summary. Not with the kenlm, srilm
      and rnnlm layouts, --entropy, --mix, --cache-window, a fixed window, an ARPA model or a model on the
      double-precision path (rnnlm's class output).
Measures (psycholinguistics):
  --units ln|log10|bits: every log-prob in one unit and one field: logprob (ln), log10prob (log10) or
      surprisal (bits: -log2 p, positive), in every format (text: the word's value and "Total: NAME=V").
      Perplexity is unit-free. Without --units: both logprob and log10prob, as above.
  --units prob: each word's probability p in the field "prob" (text: the word's value, 6 significant
      digits); the totals of a line and the summary stay logprob (ln), as a product of probabilities
      underflows; entropy in nats.
  --entropy: "entropy" per token: -sum p ln p of the distribution it was predicted from, over the whole
      vocabulary, accumulated in float64; in nats, or in the unit of --units (log10, bits).
      Text: " entropy=H".
  --rank: "rank" per token: 1 + the number of vocabulary entries with a strictly greater logit (1 = the
      model's first choice; tied logits share the best rank). Text: " rank=R".
      Both need -v word, are null (text '-') for a token that is not scored, and change no log-prob.
  --aggregate words (char and subword models): one record per word; its log-prob is the sum of its
      parts'. A char model's words are whitespace-separated: a word takes the whitespace after it (the
      whitespace before the first word goes to that word). A subword model's word starts at a piece that
      starts one (SentencePiece's "\u2581", the piece after a bpe piece without "@@"). A line's last word
      takes eos. A word with a part not scored (a context-only first part, a skipped OOV) is not scored.
      Records have no id (text "WORD LOGPROB", tsv without the id column). --entropy: the entropy before
      the word's first part; --rank is refused. Line totals, tokens and perplexity stay per token. Needs
      -v word.
Fixed input windows (Keras; docs/scoring.md, section Fixed input windows): --pad-to N predicts every token
from the last N tokens before it (of its line in sentence mode, of the stream in document mode; the start
token included), pre-padded with the tokenizer's pad_id (else 0; zero vectors on a one-hot model) to exactly N, the LSTM run from the zero
state over them, as a Keras app's model.predict(pad_sequences(..., maxlen=N, padding='pre')) does.
--window N: the last N tokens, unpadded. What is scored does not change (a first token without context
stays context only). A model whose config.json has input_length uses --pad-to input_length by default (a
note on stderr says so); --stateful carries the state instead. N in [1, 1000000]. Each token then costs
up to N steps (checkpointed pads are shared): a long document with a large --window is slow.
JSONL documents (docs/scoring.md, section JSONL documents): --input-format jsonl reads one JSON object per
line and writes each back, in input order, as a filter (Hadoop streaming, spark pipe): the line's own bytes
(never re-serialized), trailing whitespace removed, its final '}' replaced by ', "logprob": L, "tokens": N,
"oovs": K, "perplexity": P}'; L (ln) and P with 9 significant digits, null when
not finite or nothing was scored. The text is the top-level string field --text-field (default "text"),
read as a file would be: split at "\n" (a "\r" before it stripped), a final "\n" ends the last line;
each line is scored as score scores a line of a file with the same options (--context, --no-eos, --oov,
--skip-empty, --ids, --pad-to/--window); --context document: one stream per document, from the start state,
so documents never depend on each other. L, N, K are the sums over the lines, P = exp(-L/N) (OOVs
included). --min-perplexity X / --max-perplexity X keep a document only when X <= P (P <= X); one with no
scored token is then dropped. stdout: the kept documents only; stderr: one summary line (documents, kept,
filtered, errors, tokens, perplexity of the scored documents). A bad document (invalid JSON, not an object,
the text field missing or not a string, a top-level logprob/tokens/oovs/perplexity already present, invalid
UTF-8, an OOV under --oov error) is "FILE:LINE: ...": --on-error fail (default) writes every document before
it, then the error, exit 1; --on-error skip writes a warning line for it on stderr and goes on (exit 0).
--shard K/N scores the K-th of N contiguous parts of the input files, cut by bytes on line boundaries (as
split -n l/K/N; regular files only): the N outputs concatenated are one run's. --resume DIR keeps the
output per block of 1024 documents in DIR (written to a temporary file and renamed, then a completion
marker): launched again after a kill, the same command writes the finished blocks from DIR and scores the
rest; a DIR of other inputs or options is refused (exit 2).
Not with -v, --output-format, --units, --entropy, --rank or --aggregate words (exit 2); the jsonl options
are refused without --input-format jsonl.
Numbers in jsonl/tsv/lmzoo have 9 significant digits. Speed (tokens/s) goes to stderr, never to stdout.)";

struct Opts {
  std::string model_dir;
  std::vector<std::string> files, file_opts;  // positionals, -f/--file
  Verbosity verbosity = Verbosity::Word;
  Format format = Format::Text;
  std::string context = "sentence", progress = "auto", normalize = "none";
  std::string units, aggregate = "tokens";  // units "": the historic logprob and log10prob fields
  std::vector<std::string> mix;             // --mix PATH:WEIGHT
  std::string mix_mode = "linear";
  std::string softmax = "full";
  tasks::CacheOptions cache;
  tasks::OovPolicy oov = tasks::OovPolicy::Skip;
  bool no_eos = false, no_bos = false, skip_empty = false, ids = false, entropy = false, rank = false;
  bool reverse = false;
  int batch_size = 64, threads = 0;
  Precision precision = Precision::Fp32;
  EmbeddingFold fold = EmbeddingFold::Auto;
  WindowArgs window;
  // --input-format jsonl (cli/score_jsonl.cpp): the options only it takes, and the ones it refuses.
  std::string input_format = "text", text_field = "text", on_error = "fail";
  double min_perplexity = 0, max_perplexity = 0;
  std::string shard, resume;
  CLI::Option *verbosity_opt = nullptr, *format_opt = nullptr, *text_field_opt = nullptr,
              *on_error_opt = nullptr, *min_opt = nullptr, *max_opt = nullptr, *shard_opt = nullptr,
              *resume_opt = nullptr;
};

// --input-format jsonl: stdout carries only the documents, so what would shape per-line records is refused,
// and the jsonl options are refused without it (exit 2, before the model loads).
std::optional<JsonlRun> jsonl_run(const Opts& o) {
  const bool jsonl = o.input_format == "jsonl";
  if (!jsonl) {
    for (const CLI::Option* opt :
         {o.text_field_opt, o.on_error_opt, o.min_opt, o.max_opt, o.shard_opt, o.resume_opt})
      if (opt->count() > 0)
        throw UsageError(opt->get_name() + ": only with --input-format jsonl (JSONL documents)");
    return std::nullopt;
  }
  auto refuse = [](const std::string& what) {
    throw UsageError(
        what +
        ": not with --input-format jsonl (stdout carries the documents, each with logprob, tokens, "
        "oovs and perplexity added)");
  };
  if (o.verbosity_opt->count() > 0) refuse("-v/--verbosity");
  if (o.format_opt->count() > 0) refuse("--output-format");
  if (!o.units.empty()) refuse("--units");
  if (o.entropy) refuse("--entropy");
  if (o.rank) refuse("--rank");
  if (!o.mix.empty()) refuse("--mix");
  if (o.cache.on()) refuse("--cache-window");
  if (o.softmax != "full") refuse("--softmax " + o.softmax);
  if (o.reverse) refuse("--reverse");
  if (tasks::aggregate_choices().parse(o.aggregate) == tasks::Aggregate::Words) refuse("--aggregate words");
  if (o.min_opt->count() > 0 && o.max_opt->count() > 0 && o.min_perplexity > o.max_perplexity)
    throw UsageError("--min-perplexity " + o.min_opt->as<std::string>() + " is above --max-perplexity " +
                     o.max_opt->as<std::string>() + ": every document would be filtered");
  JsonlRun r;
  r.model_dir = o.model_dir;
  r.files = o.files;
  r.score = line_options(o);
  r.score.add_start = !o.no_bos;
  r.window = o.window;
  r.threads = o.threads;
  r.precision = o.precision;
  r.fold = o.fold;
  r.progress = o.progress;
  r.text_field = o.text_field;
  r.skip_errors = o.on_error == "skip";
  if (o.min_opt->count() > 0) r.min_perplexity = o.min_perplexity;
  if (o.max_opt->count() > 0) r.max_perplexity = o.max_perplexity;
  if (o.shard_opt->count() > 0) r.shard = tasks::parse_shard(o.shard);
  if (o.resume_opt->count() > 0) r.resume_dir = o.resume;
  return r;
}

// Hard-wrapped prose (a book's text broken at ~70 columns): most lines short and ending without a
// sentence end, and sentences that end inside lines. Sentence mode scores each piece of a sentence from
// a reset state; the hint says that --context document reads it as one text. A corpus of one sentence per
// line (PTB has no punctuation at all) has no sentence ending inside a line, so it gets no hint.
class WrappedProseProbe {
 public:
  static constexpr size_t kLines = 2000;  // the first non-empty lines looked at
  void add(const std::vector<std::string>& lines) {
    for (const auto& l : lines) {
      if (seen_ >= kLines) return;
      const size_t end = l.find_last_not_of(" \t");
      if (end == std::string::npos) continue;
      ++seen_;
      short_ += end < 100;
      open_ += !sentence_end(l[end]) && l[end] != '"' && l[end] != '\'' && l[end] != ')' && l[end] != ':' &&
               l[end] != ';';
      for (size_t i = 0; i + 2 < end; ++i)
        if (sentence_end(l[i]) && l[i + 1] == ' ' &&
            ((l[i + 2] >= 'A' && l[i + 2] <= 'Z') || (l[i + 2] & 0x80))) {
          ++inner_;
          break;
        }
    }
  }
  bool wrapped() const {
    return seen_ >= 20 && short_ * 10 >= seen_ * 8 && open_ * 2 >= seen_ && inner_ * 100 >= seen_ * 15;
  }

 private:
  static bool sentence_end(char c) { return c == '.' || c == '!' || c == '?'; }
  size_t seen_ = 0, short_ = 0, open_ = 0, inner_ = 0;
};

// The combinations that cannot be honoured, refused before the model loads (exit 2).
ScoreView checked_view(const Opts& o) {
  ScoreView v;
  v.verbosity = o.verbosity;
  v.format = o.format;
  v.entropy = o.entropy;
  v.rank = o.rank;
  v.words = tasks::aggregate_choices().parse(o.aggregate) == tasks::Aggregate::Words;
  if (!o.units.empty()) v.units = tasks::units_choices().parse(o.units);
  v.logits = tasks::softmax_choices().parse(o.softmax) == tasks::Softmax::Skip;
  if (v.logits && ngram_layout(o.format))
    throw UsageError(
        "--softmax skip: --output-format " + std::string(format_name(o.format)) +
        " reproduces another tool's layout, which has no place to say the scores are unnormalised");
  if (o.reverse && !o.mix.empty())
    throw UsageError("--reverse: not with --mix (the n-gram models read the sentence left to right)");
  if (v.logits && !o.mix.empty())
    throw UsageError("--softmax skip: not with --mix (a mixture adds probabilities)");
  const bool per_word = o.verbosity == Verbosity::Word;
  if (o.format == Format::Lmzoo) {
    if (!o.units.empty() && v.units != Units::Bits)
      throw UsageError("--units " + o.units + ": --output-format lmzoo gives surprisal in bits only");
    if (!per_word) throw UsageError("--output-format lmzoo: a per-token table, it takes only -v word");
    v.units = Units::Bits;
  }
  if (ngram_layout(o.format)) {
    const std::string name = format_name(o.format);
    if (!o.units.empty() && v.units != Units::Log10)
      throw UsageError("--units " + o.units + ": --output-format " + name + " gives log10 only");
    if (o.entropy || o.rank || v.words)
      throw UsageError("--output-format " + name +
                       ": the n-gram layout has no place for --entropy, --rank or --aggregate words");
    v.units = Units::Log10;
  }
  if (o.entropy && !per_word) throw UsageError("--entropy: a per-token measure, it needs -v word");
  if (o.rank && !per_word) throw UsageError("--rank: a per-token measure, it needs -v word");
  if (v.words && !per_word)
    throw UsageError("--aggregate words: changes only the per-token records, it needs -v word");
  if (v.words && o.rank)
    throw UsageError("--rank: not defined with --aggregate words (a word is no entry of a char vocabulary)");
  return v;
}

// --mix: the ARPA models that score the first model's words with it (tasks/mix.hpp).
tasks::NgramMix mix_of(const Opts& o, const tasks::ScoreOptions& task, const Model* model,
                       const NgramModel* arpa) {
  auto plan = load_mix_plan(
      o.mix, arpa ? tasks::NgramMix::words_of(*arpa) : tasks::NgramMix::words_of(*model), false, o.mix_mode);
  return tasks::NgramMix(plan, task, model);
}

int run(const Opts& o) {
  if (auto jsonl = jsonl_run(o)) return run_score_jsonl(*jsonl);
  const ScoreView view = checked_view(o);
  check_readable(o.files);
  tasks::ScoreOptions task = line_options(o);
  task.add_start = !o.no_bos;
  task.entropy = o.entropy;
  task.rank = o.rank;
  task.cache = o.cache;
  task.aggregate = view.words ? tasks::Aggregate::Words : tasks::Aggregate::Tokens;
  task.softmax = view.logits ? tasks::Softmax::Skip : tasks::Softmax::Full;
  task.reverse = o.reverse;
  // An ARPA file where a model directory goes: the n-gram model alone (tasks/ngram_score.hpp).
  std::shared_ptr<const Model> model;
  std::unique_ptr<Engine> engine;
  std::optional<tasks::Scorer> neural;
  std::optional<tasks::NgramScorer> ngram;
  std::shared_ptr<const NgramModel> ngram_model;
  if (NgramModel::is_arpa(o.model_dir)) {
    if (o.window.pad_opt->count() > 0 || o.window.window_opt->count() > 0)
      throw UsageError("--pad-to/--window: an ARPA n-gram model has no fixed input window");
    if (view.logits) throw UsageError("--softmax skip: for a neural model; an ARPA model has no logits");
    if (o.reverse) throw UsageError("--reverse: for a neural model trained right to left, not an ARPA model");
    ngram_model = load_ngram(o.model_dir);
    ngram.emplace(ngram_model, task);
  } else {
    model = load_model(o.model_dir);
    if (view.words && model->tokenizer().traits().tokens_are_words)
      throw UsageError("--aggregate words: needs a char or subword model; " + o.model_dir +
                       " is a word model");
    note_oov_policy(o.oov, *model);
    task.window = resolve_window(o.window, *model);
    engine = std::make_unique<Engine>(model, engine_options(o.threads, o.precision, o.fold));
    neural.emplace(*engine, task);
  }
  std::optional<tasks::NgramMix> mixer;
  if (!o.mix.empty()) mixer.emplace(mix_of(o, task, model.get(), ngram_model.get()));
  auto score_block = [&](const std::vector<std::string>& lines, const std::string& source,
                         uint64_t first_line, const std::vector<tasks::LineEnd>& ends) {
    auto scores =
        neural ? neural->score(lines, source, first_line, ends) : ngram->score(lines, source, first_line);
    if (mixer) mixer->mix(scores, engine.get());
    return scores;
  };
  tasks::ScoreSummary summary;
  Emitter out(o.format);
  Progress progress("score", o.progress, o.files);
  out.begin(score_table(view));
  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // Blocks bound memory: a file of any size streams through 4096 lines at a time.
  const size_t block = 4096;
  LineReader in(o.files);
  std::vector<std::string> lines;
  std::vector<tasks::LineEnd> ends;
  uint64_t first = 0;
  std::string first_nonfinite;  // FILE:LINE of the first line with a non-finite log-prob
  uint64_t sentence = 0;        // lm-zoo's sentence_id: the line's 1-based position in the whole input
  const bool document = task.context == tasks::ContextMode::Document;
  WrappedProseProbe prose;
  StreamPos pos{true};
  // srilm accumulates its per-file statistics from the line records, so it gets them at every level.
  const bool emit_lines =
      o.verbosity != Verbosity::Summary || o.format == Format::Srilm || o.format == Format::Rnnlm;
  // A cased text against a lowercase-only vocabulary (no unk, no lowercasing) loses its capitalised words
  // silently: the first such skipped word gets one warning that says the fix. The probe with "A" tells
  // once whether the model is of that kind (oov_hint reads the whole vocabulary).
  bool hint_pending = model && !tasks::oov_hint(*model, "A").empty();
  auto may_be_cased = [](const std::string& w) {
    return std::any_of(w.begin(), w.end(), [](char c) { return (c >= 'A' && c <= 'Z') || (c & 0x80); });
  };
  while (in.next_file()) {
    auto take = [&](const std::vector<tasks::LineScore>& scores) {
      for (const auto& l : scores) {
        if (hint_pending && l.oovs > 0)
          for (const auto& w : l.words)
            if (w.oov && may_be_cased(w.token)) {
              std::string hint = tasks::oov_hint(*model, w.token);
              if (hint.empty()) continue;
              hint_pending = false;
              print_diagnostic("lstmlm: warning: ", in.source() + ":" + std::to_string(l.line) + ": '" +
                                                        w.token +
                                                        "' is not in the vocabulary and the model has no "
                                                        "unk_token: skipped, counted as an OOV" +
                                                        hint);
              break;
            }
        summary.add(l);
        if (l.nonfinite && first_nonfinite.empty())
          first_nonfinite = in.source() + ":" + std::to_string(l.line);
        ++sentence;
        if (emit_lines) out.emit(line_record(view, in.source(), l, sentence, pos));
        pos.reset = !document;
      }
      out.write_pending();
    };
    while (in.next_block(lines, block, first, &ends)) {
      if (!document && !o.ids) prose.add(lines);
      try {
        take(score_block(lines, in.source(), first, ends));
      } catch (const InputError&) {
        // A bad line in the block (tokenizing fails before any state changes): the lines before it are
        // scored one by one and written, so the error loses nothing, then the bad line throws again.
        // Batch composition and chunking do not change a score (tests/engine_invariance_test.cpp).
        for (size_t i = 0; i < lines.size(); ++i)
          take(score_block({lines[i]}, in.source(), first + i, {ends[i]}));
        throw;
      }
      if (progress.enabled())
        progress.update(in.bytes_done(),
                        std::to_string(summary.sentences + summary.skipped) + " lines, " +
                            std::to_string(summary.tokens) + " tokens, " +
                            std::to_string(static_cast<int64_t>(summary.tokens / seconds())) + " tokens/s");
    }
  }
  progress.finish();
  Record total = summary_record(view, summary);
  if (o.format == Format::Srilm || o.format == Format::Rnnlm)
    total.fields.push_back({"file", Value::str(in.source()), true});
  out.emit(total);
  out.end();
  if (summary.nonfinite)
    print_diagnostic("lstmlm: warning: ",
                     std::to_string(summary.nonfinite) +
                         (summary.nonfinite == 1 ? " scored token has" : " scored tokens have") +
                         " a non-finite log-probability (the first on " + first_nonfinite +
                         "): the totals and perplexities are not finite; the model's weights hold NaN or "
                         "infinite values");
  if (prose.wrapped())
    print_diagnostic("lstmlm: hint: ",
                     "the input looks like hard-wrapped prose (short lines, sentences running across "
                     "them): each line was scored as a sentence; --context document scores it as one text");
  if (const tasks::CacheStats* c = neural ? neural->cache_stats() : nullptr; c && c->tokens > 0)
    std::fprintf(
        stderr,
        "lstmlm score: cache (window %d, lambda %g, theta %g): perplexity %.4f, without it %.4f (%lld "
        "tokens)\n",
        o.cache.window, o.cache.lambda, o.cache.theta, std::exp(-c->ln_with / double(c->tokens)),
        std::exp(-c->ln_without / double(c->tokens)), static_cast<long long>(c->tokens));
  // Typed lines: the time is the typing's, not a speed.
  if (!reads_a_terminal(o.files))
    std::fprintf(stderr, "lstmlm score: %lld tokens in %.3f s (%.0f tokens/s)\n",
                 static_cast<long long>(summary.tokens), seconds(),
                 static_cast<double>(summary.tokens) / seconds());
  return 0;
}

}  // namespace score_cmd

Subcommand setup_score(CLI::App& parent) {
  using namespace score_cmd;
  auto o = std::make_shared<Opts>();
  Subcommand s;
  s.app = parent.add_subcommand("score", "Per-word log-probabilities and perplexity of text");
  s.app->footer(kHelp);
  add_model_option(*s.app, o->model_dir);
  s.app->add_option("files", o->files, "Input files ('-' or none: stdin)");
  add_file_option(*s.app, o->file_opts, "An input file, as FILE (repeatable; read before the FILEs)");
  o->verbosity_opt =
      s.app
          ->add_option("-v,--verbosity", o->verbosity,
                       "word, sentence or summary: KenLM query's -v levels (word: every token, then its "
                       "line's total; sentence: line totals; summary: the totals only); each level "
                       "ends with the summary")
          ->transform(CLI::Validator(
              [](std::string& s) {
                static const CLI::Validator words = one_of({"word", "sentence", "summary"});
                std::string why = words(s);
                if (why.empty())
                  s = std::to_string(static_cast<int>(s == "word"       ? Verbosity::Word
                                                      : s == "sentence" ? Verbosity::Sentence
                                                                        : Verbosity::Summary));
                return why;
              },
              "word|sentence|summary"))
          ->default_str("word");
  o->format_opt = add_format_option(
      *s.app, o->format,
      {Format::Text, Format::Jsonl, Format::Tsv, Format::Lmzoo, Format::Kenlm, Format::Srilm, Format::Rnnlm});
  s.app->add_option("--input-format", o->input_format, "text (a sentence per line) or jsonl (documents)")
      ->check(one_of({"text", "jsonl"}))
      ->capture_default_str();
  o->text_field_opt =
      s.app
          ->add_option("--text-field", o->text_field,
                       "jsonl: the top-level string field holding a document's text")
          ->check(CLI::Validator(
              [](std::string& v) { return v.empty() ? std::string("an empty field name") : ""; }, "NAME"))
          ->capture_default_str();
  o->on_error_opt =
      s.app
          ->add_option("--on-error", o->on_error,
                       "jsonl: a bad document stops the run (fail, exit 1) or is skipped (skip)")
          ->check(one_of({"fail", "skip"}))
          ->capture_default_str();
  o->min_opt = s.app
                   ->add_option("--min-perplexity", o->min_perplexity,
                                "jsonl: keep only documents with a perplexity of at least X")
                   ->check(real_range(0, std::numeric_limits<double>::max()));
  o->max_opt = s.app
                   ->add_option("--max-perplexity", o->max_perplexity,
                                "jsonl: keep only documents with a perplexity of at most X")
                   ->check(real_range(0, std::numeric_limits<double>::max()));
  o->shard_opt = s.app->add_option("--shard", o->shard,
                                   "jsonl: score only the K-th (1-based) of N contiguous parts of the input "
                                   "files, cut by bytes on line boundaries (as split -n l/K/N)");
  o->resume_opt = s.app->add_option("--resume", o->resume,
                                    "jsonl: keep the output block by block in DIR; a run launched again "
                                    "after a kill redoes only the unfinished block");
  s.app
      ->add_option("--units", o->units,
                   "Log-probabilities as ln, log10 or bits (surprisal = -log2 p), or prob (each word's "
                   "probability; totals in ln)")
      ->check(one_of(tasks::units_choices().names()));
  s.app->add_flag("--entropy", o->entropy, "Entropy of the distribution each token is predicted from");
  s.app->add_flag("--rank", o->rank, "Rank of each token in it (1 + tokens with a greater logit)");
  s.app->add_option("--aggregate", o->aggregate, "tokens, or words (char models: one record per word)")
      ->check(one_of(tasks::aggregate_choices().names()))
      ->capture_default_str();
  s.app->add_option("--context", o->context, "sentence (state reset per line) or document")
      ->check(one_of(tasks::context_choices().names()))
      ->capture_default_str();
  s.app->add_flag("--no-bos", o->no_bos,
                  "No start token: a line's first token is context only (KenLM's bos=False)");
  s.app->add_flag("--no-eos", o->no_eos,
                  "Do not append a line end (eos_token; in document mode a char model's \"\\n\")");
  add_oov_option(*s.app, o->oov);
  s.app->add_flag("--skip-empty", o->skip_empty, "Do not score empty lines (their record says skipped)");
  s.app->add_flag("--ids", o->ids, "Lines are whitespace-separated token ids");
  add_normalize_option(*s.app, o->normalize);
  add_cache_options(*s.app, o->cache, "of the document: --context document");
  add_mix_option(*s.app, o->mix, "per token");
  add_mix_mode_option(*s.app, o->mix_mode);
  add_softmax_option(*s.app, o->softmax, "each score is the target's logit");
  s.app->add_flag("--reverse", o->reverse,
                  "A right-to-left model: each line's tokens scored last to first (start and eos in place)");
  s.app->add_option("--batch-size", o->batch_size, "Lines per engine batch")
      ->check(int_range(1, kMaxBatch))
      ->capture_default_str();
  add_window_options(*s.app, o->window);
  add_threads_option(*s.app, o->threads);
  add_precision_option(*s.app, o->precision);
  add_fold_option(*s.app, o->fold);
  add_progress_option(*s.app, o->progress);
  s.check = [o] { o->files.insert(o->files.begin(), o->file_opts.begin(), o->file_opts.end()); };
  s.run = [o]() -> int { return run(*o); };
  return s;
}

}  // namespace lstmlm::cli
