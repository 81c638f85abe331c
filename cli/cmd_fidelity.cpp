// `lstmlm fidelity`: how far a lower precision's next-token distributions are from fp32's on a text
// (llama.cpp's `perplexity --kl-divergence`); the comparison is the library's (lstmlm/tasks/fidelity.hpp).
#include <cstdio>

#include "commands.hpp"
#include "emit.hpp"
#include "limits.hpp"
#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/fidelity.hpp"
#include "options.hpp"
#include "output.hpp"
#include "progress.hpp"

namespace lstmlm::cli {

namespace fidelity_cmd {

constexpr const char* kHelp =
    R"(Runs the text (FILE..., stdin when none or '-') through two engines on the same model, one in fp32
and one in --precision, and compares, for every scored token, the two full next-token distributions:
p (fp32) and q (the low precision). The tokens are exactly those `lstmlm score` scores with the same
options (tokenization, sentence or document mode, start token, eos, OOVs, windows; see `lstmlm score
--help`), so "perplexity_ref" is score's "Perplexity including OOVs".

Output (docs/precision.md):
  tokens          scored tokens compared (eos and OOVs scored as unk included)
  mean_kl         mean over them of KL(p||q) = sum_v p_v (ln p_v - ln q_v), in nats, summed in float64
  max_kl          the largest KL(p||q) of one token
  max_abs_dlogp   the largest |ln p(target) - ln q(target)| of one token
  top1_agreement  the fraction of tokens whose most probable next token (argmax, lowest id on ties) is
                  the same in p and q (text: a percentage, with the counts)
  perplexity_ref, perplexity_low
                  exp(-sum ln p(target) / tokens) of each side, as score's summary
  delta_ppl_rel   (perplexity_low - perplexity_ref) / perplexity_ref, signed (text: a percentage)
  kernels_ref, kernels_low
                  the kernels that ran on each side, "<precision>/<isa>" (e.g. fp32/avx2)
  text: one "Name:<TAB>value" line each; jsonl: one {"type": "fidelity", ...} object; json: an array of
  it. Input without any scored token is an error (exit 1); a precision this build or CPU lacks is a
  usage error naming the available ones (exit 2).
--mix MODEL.arpa:W (repeatable; word models) and --mix-mode: both sides' rows are the mixture's, as predict
--mix makes them (docs/mixing.md), before they are compared: the fidelity of the mixed model.)";

struct Opts {
  std::string model_dir;
  Precision precision = Precision::Fp32;
  std::vector<std::string> files, file_opts;  // positionals, -f/--file
  Format format = Format::Text;
  std::string context = "sentence", normalize = "none";
  tasks::OovPolicy oov = tasks::OovPolicy::Skip;
  bool no_eos = false, skip_empty = false, ids = false;
  int batch_size = 64, threads = 0;
  WindowArgs window;
  std::string progress = "auto";
  std::vector<std::string> mix;
  std::string mix_mode = "linear";
};

Record fidelity_record(const Opts& o, const tasks::FidelityResult& r) {
  return {"fidelity",
          {{"type", Value::str("fidelity")},
           {"precision", Value::str(std::string(precision_name(o.precision)))},
           {"kernels_ref", Value::str(r.kernels_ref)},
           {"kernels_low", Value::str(r.kernels_low)},
           {"tokens", Value::integer(r.tokens)},
           {"mean_kl", Value::num9(r.mean_kl())},
           {"max_kl", Value::num9(r.kl_max)},
           {"max_abs_dlogp", Value::num9(r.dlogp_max)},
           {"top1_agree", Value::integer(r.top1_agree)},
           {"top1_agreement", Value::num9(r.top1_agreement())},
           {"perplexity_ref", Value::num9(r.perplexity_ref())},
           {"perplexity_low", Value::num9(r.perplexity_low())},
           {"delta_ppl_rel", Value::num9(r.relative_delta_ppl())}}};
}

int run(const Opts& o) {
  check_readable(o.files);
  tasks::ScoreOptions task = line_options(o);
  auto model = load_model(o.model_dir);
  note_oov_policy(o.oov, *model);
  task.window = resolve_window(o.window, *model);
  Engine low(model, engine_options(o.threads, o.precision));
  Engine ref(model, engine_options(o.threads, Precision::Fp32));
  tasks::Fidelity fidelity(ref, low, task, load_mix_row(o.mix, o.mix_mode, *model));
  const size_t block = 4096;
  LineReader in(o.files);
  Progress progress("fidelity", o.progress, o.files);
  std::vector<std::string> lines;
  std::vector<tasks::LineEnd> ends;
  uint64_t first = 0;
  std::string sources;
  while (in.next_file()) {
    sources += (sources.empty() ? "" : ", ") + in.source();
    while (in.next_block(lines, block, first, &ends)) {
      fidelity.add(lines, in.source(), first, ends);
      check_interrupted();
      progress.update(in.bytes_done(), std::to_string(fidelity.result().tokens) + " tokens");
    }
  }
  progress.finish();
  const tasks::FidelityResult& r = fidelity.result();
  if (r.tokens == 0)
    throw InputError(sources +
                     ": no scored token to compare (the input is empty, or every token is context "
                     "only or a skipped OOV)");
  Emitter out(o.format);
  out.emit(fidelity_record(o, r));
  out.end();
  return 0;
}

}  // namespace fidelity_cmd

Subcommand setup_fidelity(CLI::App& parent) {
  using namespace fidelity_cmd;
  auto o = std::make_shared<Opts>();
  Subcommand s;
  s.app = parent.add_subcommand(
      "fidelity", "KL divergence, top-1 agreement and perplexity change of a precision against fp32");
  s.app->footer(kHelp);
  add_model_option(*s.app, o->model_dir);
  s.app->add_option("files", o->files, "Input files ('-' or none: stdin)");
  add_file_option(*s.app, o->file_opts, "An input file, as FILE (repeatable; read before the FILEs)");
  add_precision_option(*s.app, o->precision)->required()->default_str("");
  add_format_option(*s.app, o->format, {Format::Text, Format::Jsonl, Format::Json});
  s.app->add_option("--context", o->context, "sentence (state reset per line) or document, as score")
      ->check(one_of(tasks::context_choices().names()))
      ->capture_default_str();
  s.app->add_flag("--no-eos", o->no_eos, "Do not append a line end, as score --no-eos");
  add_oov_option(*s.app, o->oov);
  s.app->add_flag("--skip-empty", o->skip_empty, "Do not score empty lines");
  s.app->add_flag("--ids", o->ids, "Lines are whitespace-separated token ids");
  add_normalize_option(*s.app, o->normalize);
  s.app->add_option("--batch-size", o->batch_size, "Lines per engine batch")
      ->check(int_range(1, kMaxBatch))
      ->capture_default_str();
  add_window_options(*s.app, o->window);
  add_threads_option(*s.app, o->threads);
  add_progress_option(*s.app, o->progress);
  add_mix_option(*s.app, o->mix, "into both sides' rows before they are compared");
  add_mix_mode_option(*s.app, o->mix_mode);
  s.check = [o] { o->files.insert(o->files.begin(), o->file_opts.begin(), o->file_opts.end()); };
  s.run = [o]() -> int { return run(*o); };
  return s;
}

}  // namespace lstmlm::cli
