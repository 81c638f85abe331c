// `lstmlm rescore`: LSTM LM scores of n-best hypotheses, combined with their own scores, and the best.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "commands.hpp"
#include "emit.hpp"
#include "limits.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/ngram.hpp"
#include "lstmlm/report/rescore.hpp"
#include "lstmlm/tasks/mix.hpp"
#include "lstmlm/tasks/rescore.hpp"
#include "nbest_reader.hpp"
#include "options.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "rescore_lattices.hpp"

namespace lstmlm::cli {

namespace rescore_cmd {

constexpr const char* kHelp =
    R"(Input (--input-format; auto: a lattice file, by its first lines, is read as lattices (below); else *.tsv
is tsv, *.jsonl/*.json jsonl, anything else kaldi):
  kaldi: one hypothesis per line "UTT-N w1 w2 ...", N its number in utterance UTT (the id's part after
      the last '-'); "UTT-N" alone is an empty hypothesis. Scores come from --scores NAME=FILE, files of
      "UTT-N VALUE" lines (every hypothesis needs a value in each; an id matching no hypothesis is an
      error at the end, exit 1).
  tsv: a header with the columns utt and hyp (required), id and recording (optional); every other column
      is a score named by its header: a number, or space-separated numbers (one per scored token).
  jsonl: {"utt": str, "hyp": str, "id"?: str, "recording"?: str, "scores"?: {NAME: number | [numbers]}},
      the same score names in every record.
  A line without an id (an empty line, a Kaldi id without -N, a row without utt) is an error naming the
  file and line (exit 1): nothing is dropped. The hypotheses of an utterance must be contiguous.

Each hypothesis is scored as `lstmlm score` scores a line in sentence mode (bos/eos start, eos appended
unless --no-eos, OOVs as unk or skipped), bit for bit; prefixes shared by hypotheses are computed once.
  lm        = ln p of the hypothesis; with --interpolate L --ngram NAME: per sentence
              ln(L p_lstm + (1-L) p_ngram), or per token sum_t ln(L p_t + (1-L) q_t) when the score NAME
              holds one value per scored token (eos included); --ngram-units says how NAME is written
              (log10, as KenLM and SRILM print; ln; cost = -ln p, as Kaldi's LM costs).
  combined  = sum_k W_k * score_k + lm-weight * lm + word-penalty * words  (--weight NAME=W; a score
              without a weight is printed, not combined; words = the hypothesis' words, eos not counted).
  best      = the highest combined score of the utterance (the first on a tie). Costs (lower is better)
              take a negative weight: --weight acoustic=-0.1 --weight graph=-1.
--context conversation: each utterance continues from the best hypothesis of the previous utterance of
the same recording (the recording column or field; else the whole file is one recording), as
`score --context document` reads lines; utterance (default): every hypothesis from the sentence start.

Right-to-left models (n-best lists only): --reverse scores each hypothesis' words last to first with -m
(the start token still first, eos last: how a backward LM trained on reversed sentences reads them).
--backward-model DIR adds such a model to the forward -m: lm = (1 - W) lm_forward + W lm_backward in ln,
W = --backward-weight (0.5), lm_forward being -m's value (interpolated with --ngram first when asked), as
Kaldi's lmrescore_back.sh weighs its backward pass; not with --context conversation.

Output (one record per hypothesis, in input order; --best: only each utterance's best):
  text: "ID<TAB>combined=C<TAB>lm=L<TAB>lm_log10=L10<TAB>tokens=T<TAB>oovs=K<TAB>words=W" and "<TAB>best"
      on the best; --best: Kaldi text "UTT w1 w2 ..." (the hypothesis as given), ready for compute-wer.
  jsonl: {"type": "hyp", "file", "utt", "id", "n", "tokens", "oovs", "words", "lm_logprob", "lm_log10prob",
      ["lm_interpolated",] ["lm_backward", "lm_bidirectional",] "scores": {NAME: value}, "combined", "best",
      "hyp"}, then {"type": "summary",
      "utterances", "hypotheses", "tokens", "oovs", "steps", "computed"} (steps: the (input, target) steps
      of all hypotheses; computed: those run after prefix sharing).
  tsv: file utt id n tokens oovs words lm_logprob lm_log10prob [lm_interpolated] [lm_backward
      lm_bidirectional] NAME... combined best hyp. text adds lm_backward= and lm_bidirectional= after lm_log10.
lm_logprob is ln, lm_log10prob log10 (of the LSTM alone); 9 significant digits. Speed goes to stderr.

Lattices (--input-format kaldi-lattice or slf; auto: from the first file's content; gzip read as it is):
  kaldi-lattice: Kaldi text archives (lattice-copy ark:lat.1.gz ark,t:-), CompactLattice or Lattice, word
      ids resolved with --words words.txt (id 0 is epsilon); scores graph and acoustic, costs as written.
  slf: HTK SLF; scores acoustic and lm (and pron for r=), natural logs whatever base= says; !NULL,
      !ENTER, !EXIT, <s> and </s> carry no word.
  Each path is scored as the hypothesis of its words would be (bit for bit), combined as above with
  --weight NAME=W over the lattice's scores (Kaldi costs take negative weights: --weight acoustic=-0.1
  --weight graph=-1 keeps the graph's costs beside the LSTM, graph=0 drops them). The LSTM's histories are
  expanded over the lattice: --max-ngram-order N merges histories that share their last N-1 words
  (0: none, exact), --beam B drops those B below their node's best, --max-tokens-per-node K keeps the K
  best (memory: at most 2K LSTM states a node).
  Output: the records above for the --n-best N best distinct word sequences (default 1; utt = the
  lattice's key, id KEY-N), --best as Kaldi text, or --output-format kaldi-lattice|slf: the lattice of
  the histories kept, with the acoustic scores as they were and the LM score (Kaldi graph cost, SLF l=)
  replaced by the rest of the combination, so `lattice-best-path --acoustic-scale=A` (A = -the acoustic
  weight) or an SLF reader with its acscale finds the same best path. Stderr: arcs/s, LSTM steps per arc.)";

struct Opts {
  std::string model_dir;
  std::vector<std::string> files, file_opts, score_specs, weight_specs, mix;  // file_opts: -f/--file
  std::string mix_mode = "linear";
  std::string input_format = "auto", context = "utterance", ngram, ngram_units = "log10";
  std::string output_format = "text", words;
  Format format = Format::Text;
  double beam = 0;
  int max_ngram_order = 0;
  int64_t max_tokens_per_node = 1000, n_best = 0;
  tasks::OovPolicy oov = tasks::OovPolicy::Skip;
  double lm_weight = 1.0, word_penalty = 0.0, lambda = -1;
  bool best = false, no_eos = false, ids = false, reverse = false;
  std::string backward_model;
  double backward_weight = 0.5;
  int batch_size = 64, threads = 0;
  std::string progress = "auto";
};

// "NAME=VALUE" of a repeatable option.
std::pair<std::string, std::string> name_value(const std::string& spec, const std::string& option) {
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw UsageError(option + ": '" + spec + "' is not NAME=VALUE");
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

tasks::LogUnits units(const std::string& u) { return tasks::ngram_units_choices().parse(u); }

// Lattices in (--input-format kaldi-lattice|slf, or auto on a lattice file): the options that apply to them.
int run_lattices(const Opts& o) {
  if (!o.score_specs.empty()) throw UsageError("--scores: a lattice carries its own scores");
  if (!o.backward_model.empty() || o.reverse)
    throw UsageError(std::string(o.reverse ? "--reverse" : "--backward-model") +
                     ": n-best lists only (a lattice is rescored left to right)");
  if (!o.ngram.empty() || !o.mix.empty() || o.context != "utterance" || o.ids)
    throw UsageError(std::string(!o.ngram.empty() ? "--interpolate"
                                 : !o.mix.empty() ? "--mix"
                                 : o.ids          ? "--ids"
                                                  : "--context conversation") +
                     ": not with lattice input");
  LatticeCli c;
  c.model_dir = o.model_dir;
  c.words = o.words;
  c.files = o.files;
  if (o.input_format == "kaldi-lattice") c.input = LatticeFormat::Kaldi;
  if (o.input_format == "slf") c.input = LatticeFormat::Slf;
  if (o.output_format == "kaldi-lattice") c.output = LatticeFormat::Kaldi;
  if (o.output_format == "slf") c.output = LatticeFormat::Slf;
  c.format = o.format;
  for (const auto& spec : o.weight_specs) {
    auto [name, value] = name_value(spec, "--weight");
    char* end = nullptr;
    const double w = std::strtod(value.c_str(), &end);
    if (end != value.c_str() + value.size() || !std::isfinite(w) || std::fabs(w) > 1e12)
      throw UsageError("--weight " + name + ": '" + value + "' is not a finite number");
    c.weights.emplace_back(name, w);
  }
  c.lm_weight = o.lm_weight;
  c.word_penalty = o.word_penalty;
  c.beam = o.beam;
  c.max_ngram_order = o.max_ngram_order;
  c.max_tokens_per_node = o.max_tokens_per_node;
  c.n_best = o.n_best > 0 ? o.n_best : 1;
  c.best = o.best;
  c.no_eos = o.no_eos;
  c.oov = o.oov;
  c.batch_size = o.batch_size;
  c.threads = o.threads;
  return rescore_lattices(c);
}

int run(const Opts& o) {
  const bool lattices = o.input_format == "kaldi-lattice" || o.input_format == "slf" ||
                        (o.input_format == "auto" && lattice_input(o.files));
  if (lattices) return run_lattices(o);
  if (o.output_format == "kaldi-lattice" || o.output_format == "slf")
    throw UsageError("--output-format " + o.output_format +
                     ": needs lattice input (--input-format kaldi-lattice or slf)");
  if (o.n_best > 0) throw UsageError("--n-best: for lattice input (an n-best list is rescored whole)");
  std::vector<ScoreFile> score_files;
  for (const auto& spec : o.score_specs) {
    auto [name, path] = name_value(spec, "--scores");
    for (const auto& sf : score_files)
      if (sf.name == name) throw UsageError("--scores: the name '" + name + "' is given twice");
    score_files.push_back({name, path});
  }
  std::vector<std::string> inputs = o.files;
  for (const auto& sf : score_files) inputs.push_back(sf.path);
  check_readable(inputs);
  NbestFormat nf = o.input_format == "kaldi"   ? NbestFormat::Kaldi
                   : o.input_format == "tsv"   ? NbestFormat::Tsv
                   : o.input_format == "jsonl" ? NbestFormat::Jsonl
                                               : NbestFormat::Auto;
  NbestReader in(o.files, nf, score_files);
  report::RescoreLayout lay;
  lay.names = in.score_names();
  auto index_of = [&](const std::string& name, const std::string& option) {
    for (size_t k = 0; k < lay.names.size(); ++k)
      if (lay.names[k] == name) return k;
    std::string known;
    for (const auto& n : lay.names) known += (known.empty() ? "" : ", ") + n;
    throw UsageError(option + ": no score named '" + name +
                     "' in the input (its scores: " + (known.empty() ? "none" : known) + ")");
  };
  static const char* const kColumns[] = {"type",
                                         "file",
                                         "utt",
                                         "id",
                                         "n",
                                         "tokens",
                                         "oovs",
                                         "words",
                                         "lm_logprob",
                                         "lm_log10prob",
                                         "lm_interpolated",
                                         "lm_backward",
                                         "lm_bidirectional",
                                         "scores",
                                         "combined",
                                         "best",
                                         "hyp"};
  for (const auto& n : lay.names)
    for (const char* c : kColumns)
      if (n == c) throw UsageError("a score is named '" + n + "', a name rescore's output uses; rename it");

  tasks::RescoreOptions task;
  task.score.append_eos = !o.no_eos;
  task.score.oov = o.oov;
  task.score.ids_input = o.ids;
  task.score.batch_size = o.batch_size;
  task.score.reverse = o.reverse;
  task.backward_weight = o.backward_weight;
  task.conversation = tasks::rescore_context_choices().parse(o.context);
  task.weights.assign(lay.names.size(), 0.0);
  for (const auto& spec : o.weight_specs) {
    // The LM is no score of the input: its weight has its own option (an input score named lm is
    // still weighed by --weight lm=W).
    const bool lm_score = std::find(lay.names.begin(), lay.names.end(), "lm") != lay.names.end();
    if (!lm_score && spec.compare(0, 2, "lm") == 0 && (spec.size() == 2 || spec[2] == '='))
      throw UsageError("--weight " + spec + ": the LM's own weight is --lm-weight" +
                       (spec.size() > 3 ? " " + spec.substr(3) : " W") +
                       " (--weight NAME=W weighs a score of the input or of --scores)");
    auto [name, value] = name_value(spec, "--weight");
    double w = 0;
    char* end = nullptr;
    w = std::strtod(value.c_str(), &end);
    if (end != value.c_str() + value.size() || !std::isfinite(w) || std::fabs(w) > 1e12)
      throw UsageError("--weight " + name + ": '" + value + "' is not a finite number");
    task.weights[index_of(name, "--weight")] = w;
  }
  task.lm_weight = o.lm_weight;
  task.word_penalty = o.word_penalty;
  if (!o.ngram.empty())
    task.interpolate = tasks::Interpolation{o.lambda, index_of(o.ngram, "--ngram"), units(o.ngram_units)};
  lay.interpolated = task.interpolate.has_value();
  lay.backward = !o.backward_model.empty();

  auto model = load_model(o.model_dir);
  if (!o.mix.empty()) task.mix = load_mix_plan(o.mix, tasks::NgramMix::words_of(*model), true, o.mix_mode);
  note_oov_policy(o.oov, *model);
  Engine engine(model, o.threads);
  std::unique_ptr<Engine> backward;
  if (lay.backward) backward = std::make_unique<Engine>(load_model(o.backward_model), o.threads);
  tasks::Rescorer rescorer(engine, task, backward.get());
  Emitter out(o.format);
  std::vector<std::string> columns = {"file", "utt",   "id",         "n",           "tokens",
                                      "oovs", "words", "lm_logprob", "lm_log10prob"};
  if (lay.interpolated) columns.push_back("lm_interpolated");
  if (lay.backward)
    for (const char* c : {"lm_backward", "lm_bidirectional"}) columns.push_back(c);
  columns.insert(columns.end(), lay.names.begin(), lay.names.end());
  for (const char* c : {"combined", "best", "hyp"}) columns.push_back(c);
  out.begin({"rescore.hyp", columns});
  const bool kaldi_best = o.best && o.format == Format::Text;
  auto t0 = std::chrono::steady_clock::now();
  int64_t utterances = 0, hypotheses = 0, tokens = 0, oovs = 0;
  auto emit_one = [&](const tasks::Hypothesis& h, const tasks::HypothesisScore& s, bool first_of_utterance) {
    ++hypotheses;
    tokens += s.lm.tokens;
    oovs += s.lm.oovs;
    utterances += first_of_utterance;
    if (o.best && !s.best) return;
    if (kaldi_best)
      out.raw(escape_text(h.utt) + (h.text.empty() ? "" : " ") + escape_text(h.text) + "\n");
    else
      out.emit(report::hyp_record(o.format, lay, in.source(), h, s));
  };
  std::vector<tasks::Hypothesis> block;
  Progress progress("rescore", o.progress, o.files);
  while (in.next_block(block, 4096)) {
    std::vector<tasks::HypothesisScore> scores;
    try {
      scores = rescorer.rescore(block, in.source());
    } catch (const InputError&) {
      // A bad hypothesis (found before any number changes): the utterances before its own are scored
      // and written one by one, then it throws again. Batching never changes a number.
      for (size_t b = 0, e; b < block.size(); b = e) {
        for (e = b + 1; e < block.size() && block[e].utt == block[b].utt;) ++e;
        std::vector<tasks::Hypothesis> one(block.begin() + std::ptrdiff_t(b),
                                           block.begin() + std::ptrdiff_t(e));
        auto s = rescorer.rescore(one, in.source());
        for (size_t i = 0; i < one.size(); ++i) emit_one(one[i], s[i], i == 0);
        out.write_pending();
      }
      throw;
    }
    for (size_t i = 0; i < block.size(); ++i)
      emit_one(block[i], scores[i], i == 0 || block[i].utt != block[i - 1].utt);
    out.write_pending();
    check_interrupted();
    progress.update(in.bytes_done(), std::to_string(utterances) + " utterances, " +
                                         std::to_string(hypotheses) + " hypotheses");
  }
  progress.finish();
  std::string unused = in.unused_scores();
  const auto& st = rescorer.stats();
  out.emit(report::rescore_summary_record(utterances, hypotheses, tokens, oovs, st));
  out.end();
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr,
               "lstmlm rescore: %lld hypotheses of %lld utterances in %.3f s (%.0f hypotheses/s); prefix "
               "sharing ran %lld of %lld steps\n",
               static_cast<long long>(hypotheses), static_cast<long long>(utterances), sec,
               static_cast<double>(hypotheses) / sec, static_cast<long long>(st.computed),
               static_cast<long long>(st.steps));
  if (!unused.empty()) throw InputError(unused);
  return 0;
}

}  // namespace rescore_cmd

Subcommand setup_rescore(CLI::App& parent) {
  using namespace rescore_cmd;
  auto o = std::make_shared<Opts>();
  Subcommand s;
  s.app = parent.add_subcommand("rescore", "Rescore n-best hypotheses or lattices with the LSTM LM");
  s.app->footer(kHelp);
  add_model_option(*s.app, o->model_dir);
  s.app->add_option("files", o->files, "N-best or lattice files ('-' or none: stdin)");
  add_file_option(*s.app, o->file_opts, "An n-best file, as FILE (repeatable; read before the FILEs)");
  s.app
      ->add_option("--input-format", o->input_format,
                   "auto, kaldi, tsv or jsonl (n-best lists), kaldi-lattice or slf (lattices)")
      ->check(one_of({"auto", "kaldi", "tsv", "jsonl", "kaldi-lattice", "slf"}))
      ->capture_default_str();
  s.app->add_option("--words", o->words, "Kaldi's words.txt, the word ids of Kaldi lattices");
  s.app->add_option("--n-best", o->n_best, "Lattices: the N best distinct word sequences (default 1)")
      ->check(int_range(1, 1000000));
  s.app
      ->add_option("--max-ngram-order", o->max_ngram_order,
                   "Lattices: histories sharing their last N-1 words are merged (0: none)")
      ->check(int_range(0, 100))
      ->capture_default_str();
  s.app
      ->add_option("--beam", o->beam,
                   "Lattices: histories this far below a node's best are dropped (default: none)")
      ->check(real_range(1e-12, 1e12));
  s.app
      ->add_option("--max-tokens-per-node", o->max_tokens_per_node,
                   "Lattices: the histories extended per node, at most (memory: at most twice this many LSTM "
                   "states per node)")
      ->check(int_range(1, 1000000))
      ->capture_default_str();
  repeatable(s.app->add_option("--scores", o->score_specs,
                               "NAME=FILE: Kaldi 'UTT-N VALUE' scores (repeatable, one NAME=FILE each)"));
  repeatable(s.app->add_option("--weight", o->weight_specs,
                               "NAME=W: weight of a score in the combination (repeatable, one NAME=W each; "
                               "the LM's own weight is --lm-weight)"));
  s.app->add_option("--lm-weight", o->lm_weight, "Weight of the LM log-prob (ln) in the combination")
      ->check(real_range(-1e12, 1e12))
      ->capture_default_str();
  s.app->add_option("--word-penalty", o->word_penalty, "Added per word of the hypothesis")
      ->check(real_range(-1e12, 1e12))
      ->capture_default_str();
  s.app
      ->add_option("--interpolate", o->lambda,
                   "LAMBDA in [0, 1]: weight of the LSTM probability (needs --ngram)")
      ->check(real_range(0, 1));
  s.app->add_option("--ngram", o->ngram, "NAME: the score holding the n-gram log-prob to interpolate with");
  repeatable(
      s.app->add_option("--mix", o->mix,
                        "Mix an ARPA n-gram model into the LM per token: MODEL:WEIGHT, repeatable; a weight "
                        "in (0, 1] interpolates linearly, one in [-1, 0) subtracts (LODR) (docs/mixing.md)"));
  add_mix_mode_option(*s.app, o->mix_mode);
  s.app->add_option("--ngram-units", o->ngram_units, "How --ngram is written: log10, ln or cost (-ln p)")
      ->check(one_of(tasks::ngram_units_choices().names()))
      ->capture_default_str();
  s.app->add_flag("--best", o->best, "Only the best hypothesis of each utterance (text: Kaldi 'UTT words')");
  s.app->add_option("--context", o->context, "utterance or conversation")
      ->check(one_of(tasks::rescore_context_choices().names()))
      ->capture_default_str();
  s.app
      ->add_option_function<std::string>(
          "--output-format",
          [o](const std::string& v) {
            o->output_format = v;
            if (v != "kaldi-lattice" && v != "slf") o->format = parse_format(v);
          },
          "Output format: text, jsonl or tsv (records); kaldi-lattice or slf (lattice input: the lattice "
          "rescored)")
      ->check(one_of({"text", "jsonl", "tsv", "kaldi-lattice", "slf"}))
      ->default_str("text");
  s.app->add_flag("--no-eos", o->no_eos, "Do not append eos_token to each hypothesis");
  s.app->add_flag("--reverse", o->reverse,
                  "-m is a right-to-left model: each hypothesis' words are scored last to first");
  s.app->add_option("--backward-model", o->backward_model,
                    "A right-to-left model weighed in: LM = (1 - W) forward + W backward (ln p)");
  s.app->add_option("--backward-weight", o->backward_weight, "W of --backward-model, in [0, 1]")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  add_oov_option(*s.app, o->oov);
  s.app->add_flag("--ids", o->ids, "Hypotheses are whitespace-separated token ids");
  s.app->add_option("--batch-size", o->batch_size, "Rows per engine batch")
      ->check(int_range(1, kMaxBatch))
      ->capture_default_str();
  add_threads_option(*s.app, o->threads);
  add_progress_option(*s.app, o->progress);
  s.check = [o] {
    o->files.insert(o->files.begin(), o->file_opts.begin(), o->file_opts.end());
    if ((o->lambda >= 0) != !o->ngram.empty())
      throw UsageError("--interpolate and --ngram go together: --interpolate LAMBDA --ngram NAME");
  };
  s.run = [o]() -> int { return run(*o); };
  return s;
}

}  // namespace lstmlm::cli
