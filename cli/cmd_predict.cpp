// `lstmlm predict`: the top-N next tokens after each context (arguments, or stdin lines in batches).
#include <thread>

#include "commands.hpp"
#include "emit.hpp"
#include "limits.hpp"
#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/report/predict.hpp"
#include "lstmlm/tasks/keyboard.hpp"
#include "lstmlm/tasks/ngram_score.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "options.hpp"
#include "output.hpp"
#include "progress.hpp"

namespace lstmlm::cli {

namespace predict_cmd {

constexpr const char* kHelp =
    R"(Predicts the next token after each CONTEXT (-p TEXT gives one too, as llama.cpp's prompt), or after
each line of the -f FILEs, or of stdin when neither is given (a file is read in blocks and batched; a
terminal or pipe is answered line by line).

An ARPA n-gram model (a file where the model directory goes) ranks its words (every unigram but <s>) after
each context read as score -m FILE.arpa reads a line (--pad-to, --window, --ids, --boost, --mix refused).

Context: text is tokenized like `score` input (see `lstmlm score --help`) and, when the model has a
bos_token (else an eos_token), that token is fed first, so predict agrees with score's sentence mode
(--no-bos turns this off). With --ids each context is whitespace-separated token ids, fed exactly as given.
An OOV word is fed as unk_token; without one it is skipped with a one-line warning naming it (--oov error
refuses it, exit 1). A context that leaves nothing to feed (empty, on a model without bos/eos and without
a --pad-to window) is an error (exit 1).

Fixed input windows (Keras; docs/scoring.md): --pad-to N keeps the last N ids of the context (the start
token included) and pre-pads them with the tokenizer's pad_id (else 0; zero vectors on a one-hot model) to exactly N, then runs the LSTM
from the zero state over them (Keras pad_sequences(maxlen=N, padding='pre', truncating='pre') before
model.predict). --window N: the last N ids, unpadded. A model whose config.json has input_length uses
--pad-to input_length by default (a note on stderr says so); --stateful turns that off. N in [1, 1000000].

Output (--top N candidates, by descending probability, ties by ascending id; --top 0 = whole vocabulary):
  jsonl: one object per context, in input order:
    {"type": "prediction", "context": "<text as given>", "ids": [fed ids...],
     ("pads": P, with --pad-to: pad ids fed first)
     "top": [{"token": str, "id": int, "prob": p, "logprob": ln p}, ...]}
    (--softmax skip: each candidate {"token", "id", "logit"} and the record has "softmax": "skip")
    numbers with 9 significant digits (round-trip float32).
  text: per context a line "> CONTEXT", then one line per candidate:
    "RANK<TAB>TOKEN<TAB>id=ID<TAB>prob=P<TAB>logprob=LN_P" (prob with 6 decimals, logprob with 4);
    --softmax skip: "# softmax skip: ..." after the context line, and "logit=Z" for the two numbers.
    CONTEXT and TOKEN are escaped: \t, \n, \r, \\, and \xNN for other control bytes (jsonl: raw).

Keyboards (docs/keyboard.md): --prefix STR ranks only the words that start with STR, the letters typed so far
(lowercased when the model's tokenizer lowercases; special tokens and unk are never completions); a character
model feeds STR after the context and ranks completions to the next word boundary (whitespace, a line end,
eos or a filtered character), each candidate the whole word. --boost FILE adds a bonus to words and phrases:
one "PHRASE<TAB>BONUS" line each (BONUS a natural log in [-100, 100]; '#' starts a comment); an entry applies
when the tokens before its last one end the context; the bonuses that apply add up and the distribution is
renormalized, lp' = lp + bonus - ln sum exp(lp + bonus); the candidates show the boosted numbers.
--mix MODEL:W (repeatable; word models; an ARPA file or a word model's directory) mixes other models into
each row first (docs/mixing.md): a word's probability is the one score --mix gives it, and <unk> stands for
every word the model lacks (1 - the others), so the candidates show the mixture's numbers. --cache-window W
applies the continuous cache pointer over the context's own words to the row before the mixture (the
context's position past W, as score --cache-window computes each word).)";

struct Opts {
  std::string model_dir;
  std::vector<std::string> contexts, prompts, files;  // positionals, -p/--prompt, -f/--file
  Format format = Format::Text;
  tasks::PredictOptions task;
  WindowArgs window;
  bool no_bos = false;
  int threads = 0;
  std::string progress = "auto";
  Precision precision = Precision::Fp32;
  EmbeddingFold fold = EmbeddingFold::Auto;
  std::string boost_file;
  std::vector<std::string> mix;
  std::string mix_mode = "linear";
  std::string softmax = "full";
};

int run(const Opts& o) {
  tasks::PredictOptions task = o.task;
  task.add_start = !o.no_bos;
  task.softmax = tasks::softmax_choices().parse(o.softmax);
  check_readable(o.files);
  // An ARPA file where the model goes: its words ranked (tasks::predict_ngram); else a neural model.
  std::shared_ptr<const NgramModel> arpa;
  std::shared_ptr<const Model> model;
  std::unique_ptr<Engine> engine;
  if (NgramModel::is_arpa(o.model_dir)) {
    refuse_for_ngram(o.window, o.mix, o.boost_file, o.task.cache);
    if (task.softmax == tasks::Softmax::Skip)
      throw UsageError("--softmax skip: for a neural model; an ARPA model's probabilities have no logits");
    arpa = load_ngram(o.model_dir);
  } else {
    model = load_model(o.model_dir);
    task.mix = load_mix_row(o.mix, o.mix_mode, *model);
    if (!o.boost_file.empty())
      task.boost = std::make_shared<tasks::Boost>(tasks::Boost::load(*model, o.boost_file));
    note_oov_policy(task.oov, *model);
    task.window = resolve_window(o.window, *model);
    engine = std::make_unique<Engine>(model, engine_options(o.threads, o.precision, o.fold));
  }
  const bool padded = task.window.mode == tasks::WindowMode::Pad;
  auto warn = [&](const std::string& source, uint64_t first, const std::vector<tasks::Prediction>& preds) {
    if (!model) return;  // an n-gram model reads an unknown word as <unk>, as score does
    for (size_t i = 0; i < preds.size(); ++i)
      warn_skipped(*model, source + ":" + std::to_string(first + i), preds[i].skipped);
  };
  auto predict = [&](const std::vector<std::string>& contexts, const std::string& source, uint64_t first) {
    return arpa ? tasks::predict_ngram(*arpa, contexts, task, source, first)
                : tasks::predict(*engine, contexts, task, source, first);
  };
  Emitter out(o.format);
  if (!o.contexts.empty()) {
    auto preds = predict(o.contexts, "argument", 1);
    warn("argument", 1, preds);
    for (size_t i = 0; i < preds.size(); ++i)
      out.emit(report::prediction_record(o.contexts[i], preds[i], padded));
    out.end();
    return 0;
  }
  LineReader in(o.files);
  Progress progress("predict", o.progress, o.files);
  uint64_t contexts = 0;
  const size_t block = 4096;
  std::vector<std::string> lines;
  uint64_t first = 0;
  // A context's place in messages: stdin:LINE (as always) or FILE:LINE.
  auto source = [&in] { return in.source() == "-" ? std::string("stdin") : in.source(); };
  while (in.next_file())
    while (in.next_block(lines, block, first)) {
      std::vector<tasks::Prediction> preds;
      try {
        preds = predict(lines, source(), first);
      } catch (const InputError&) {
        // A bad line in the block: the lines before it are predicted alone and written first (batching does
        // not change a result), then the bad line throws again.
        for (size_t i = 0; i < lines.size(); ++i) {
          auto one = predict({lines[i]}, source(), first + i);
          warn(source(), first + i, one);
          out.emit(report::prediction_record(lines[i], one[0], padded));
          out.flush();
        }
        throw;
      }
      warn(source(), first, preds);
      for (size_t i = 0; i < preds.size(); ++i)
        out.emit(report::prediction_record(lines[i], preds[i], padded));
      out.flush();
      contexts += lines.size();
      progress.update(in.bytes_done(), std::to_string(contexts) + " contexts");
    }
  progress.finish();
  out.end();
  return 0;
}

}  // namespace predict_cmd

Subcommand setup_predict(CLI::App& parent) {
  using namespace predict_cmd;
  auto o = std::make_shared<Opts>();
  Subcommand s;
  s.app = parent.add_subcommand("predict", "Top-N next tokens after each context");
  s.app->footer(kHelp);
  add_model_option(*s.app, o->model_dir);
  s.app->add_option("context", o->contexts, "Contexts (default: one per line on stdin)");
  repeatable(s.app->add_option("-p,--prompt", o->prompts,
                               "A context, as CONTEXT (repeatable; predicted before the CONTEXTs)"));
  add_file_option(*s.app, o->files, "Contexts one per line, as stdin (repeatable)");
  s.app->add_option("--top", o->task.top, "Candidates per context; 0 = whole vocabulary")
      ->check(int_range(0, kMaxVocab))
      ->capture_default_str();
  add_format_option(*s.app, o->format, {Format::Text, Format::Jsonl});
  s.app->add_flag("--ids", o->task.ids_input, "Contexts are whitespace-separated token ids");
  add_window_options(*s.app, o->window);
  s.app->add_flag("--no-bos", o->no_bos, "Do not feed bos_token/eos_token before a text context");
  add_oov_option(*s.app, o->task.oov);
  s.app->add_option("--batch-size", o->task.batch_size, "Contexts per engine batch")
      ->check(int_range(1, kMaxBatch))
      ->capture_default_str();
  add_threads_option(*s.app, o->threads);
  add_progress_option(*s.app, o->progress);
  add_precision_option(*s.app, o->precision);
  add_fold_option(*s.app, o->fold);
  s.app->add_option("--prefix", o->task.prefix,
                    "Only words starting with these letters (a keyboard's keystroke)");
  s.app->add_option("--boost", o->boost_file,
                    "Boosted words and phrases: PHRASE<TAB>BONUS lines (natural log)");
  add_mix_option(*s.app, o->mix, "into every row before the ranking");
  add_cache_options(*s.app, o->task.cache, "of each context (its words and the hidden states before them)");
  add_mix_mode_option(*s.app, o->mix_mode);
  add_softmax_option(*s.app, o->softmax, "rank by the logits and print them");
  s.check = [o] {
    if (!o->files.empty() && (!o->contexts.empty() || !o->prompts.empty()))
      throw UsageError("-f/--file: contexts come from the files or from the command line, not both");
    o->contexts.insert(o->contexts.begin(), o->prompts.begin(), o->prompts.end());
  };
  s.run = [o]() -> int { return run(*o); };
  return s;
}

}  // namespace lstmlm::cli
