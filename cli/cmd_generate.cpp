// `lstmlm generate`: options -> tasks/generate -> text (streamed for one sample) or jsonl
// (docs/generation.md).
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>

#include "commands.hpp"
#include "emit.hpp"
#include "limits.hpp"
#include "line_reader.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/report/generate.hpp"
#include "lstmlm/tasks/beam.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/ngram_generate.hpp"
#include "options.hpp"
#include "output.hpp"

namespace lstmlm::cli {

namespace generate_cmd {

struct Args {
  std::string model;
  std::string prompt, prompt_file;
  tasks::GenerateOptions gen;
  std::string seed;
  bool seeded = false;  // --seed given; else a random seed, printed to stderr
  bool stop = true;
  int threads = 0;
  Precision precision = Precision::Fp32;
  EmbeddingFold fold = EmbeddingFold::Auto;
  Format format = Format::Text;
  WindowArgs window;
  std::string boost_file;
  std::vector<std::string> mix;
  std::string mix_mode = "linear";
  std::vector<std::string> logit_bias;
  std::string allowed_words, regex;
};

std::string read_prompt_file(const std::string& path) {
  std::string s = read_file(path, "the prompt file");
  if (s.rfind("\xEF\xBB\xBF", 0) == 0) s.erase(0, 3);  // a UTF-8 BOM is not text
  // The file's final line end ends the prompt; it is not a line break to continue from.
  if (!s.empty() && s.back() == '\n') s.pop_back();
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

uint64_t parse_seed(const std::string& s) {
  uint64_t v = 0;
  if (!parse_uint64(s, v)) throw UsageError("--seed must be an integer in [0, 2^64), got '" + s + "'");
  return v;
}

// Everything that can be refused without the model, before any output.
void check(Args& a) {
  if (a.seeded) a.gen.seed = parse_seed(a.seed);
  a.gen.validate();
}

// One sample as text, streamed: the prompt at once, then each token's piece (`join`) as `run` chooses it.
// A signal stops it after the last piece written; the line is ended all the same.
template <class Join, class Run>
int stream_text(Emitter& out, const std::string& prompt, Join& join, Run&& run) {
  check_interrupted();
  Output().write_through(prompt);
  try {
    run([&](int, const tasks::GeneratedToken& t) {
      out.raw(join.piece(t.id));
      out.flush();  // throws Interrupted after a signal (the piece not written if it was not started)
    });
  } catch (const Interrupted&) {
    Output().write_through("\n");
    throw;
  }
  Output().write_through("\n");
  out.end();
  return 0;
}

// generate -m FILE.arpa: an n-gram model's samples (tasks::generate_ngram), output as a neural model's.
int run_ngram(Args& a) {
  refuse_for_ngram(a.window, a.mix, a.boost_file, a.gen.cache);
  if (a.gen.beam.on() || !a.logit_bias.empty() || !a.allowed_words.empty() || !a.regex.empty() ||
      !a.gen.stop.empty())
    throw UsageError(
        "--beam-size, --logit-bias, --allowed-words, --regex, --stop: for a neural model, not an ARPA one");
  auto model = load_ngram(a.model);
  if (!a.seeded) {
    a.gen.seed = tasks::random_seed();
    if (a.gen.sampler.temperature > 0)
      std::fprintf(stderr, "seed: %llu\n", static_cast<unsigned long long>(a.gen.seed));
  }
  Emitter out(a.format);
  if (a.format == Format::Text && a.gen.num_samples == 1) {
    tasks::NgramTextJoin join(*model, a.gen.prompt);
    return stream_text(out, a.gen.prompt, join,
                       [&](const tasks::TokenCallback& on) { tasks::generate_ngram(*model, a.gen, on); });
  }
  auto r =
      tasks::generate_ngram(*model, a.gen, [](int, const tasks::GeneratedToken&) { check_interrupted(); });
  for (const auto& s : r.samples) out.emit(report::sample_record(*model, a.gen, s));
  out.end();
  return 0;
}

int run(Args& a) {
  if (!a.prompt_file.empty())
    a.gen.prompt = read_prompt_file(a.prompt_file);
  else
    a.gen.prompt = a.prompt;
  if (NgramModel::is_arpa(a.model)) return run_ngram(a);
  auto model = load_model(a.model);
  a.gen.mix = load_mix_row(a.mix, a.mix_mode, *model);
  if (!a.boost_file.empty())
    a.gen.boost = std::make_shared<tasks::Boost>(tasks::Boost::load(*model, a.boost_file));
  if (!a.logit_bias.empty())
    a.gen.bias = std::make_shared<tasks::LogitBias>(tasks::LogitBias::parse(*model, a.logit_bias));
  if (!a.allowed_words.empty() || !a.regex.empty()) {
    tasks::ConstraintSpec spec;
    spec.regex = a.regex;
    if (!a.allowed_words.empty()) spec.allowed = tasks::Constraint::load_allowed(*model, a.allowed_words);
    a.gen.constraint = tasks::Constraint::create(*model, spec, a.gen.end_token(*model));
  }
  note_oov_policy(a.gen.oov, *model);
  a.gen.window = resolve_window(a.window, *model);
  // Validate the prompt before any output, and warn about words the model does not know.
  const tasks::Prompt prompt =
      tasks::prompt_context(*model, a.gen.prompt, a.gen.oov, a.gen.window.mode == tasks::WindowMode::Pad);
  for (const auto& t : prompt.tokens)
    if (t.oov)
      print_diagnostic("lstmlm: warning: ", "prompt: '" + t.text + "' is not in the vocabulary, read as unk");
  warn_skipped(*model, "prompt", prompt.skipped);
  // A drawn seed is printed once the model and the prompt are accepted, and only when it can change the
  // text: greedy decoding (--temperature 0) draws nothing.
  if (!a.seeded) {
    a.gen.seed = tasks::random_seed();
    if (a.gen.sampler.temperature > 0 && !a.gen.beam.on())
      std::fprintf(stderr, "seed: %llu\n", static_cast<unsigned long long>(a.gen.seed));
  }
  Engine engine(model, engine_options(a.threads, a.precision, a.fold));
  Emitter out(a.format);
  if (a.gen.beam.on()) {
    auto r = tasks::beam_search(engine, a.gen, [] { check_interrupted(); });
    for (const auto& h : r.hypotheses) out.emit(report::hypothesis_record(*model, a.gen, h));
    out.end();
    return 0;
  }

  if (a.format == Format::Text && a.gen.num_samples == 1) {
    tasks::TextJoin join(model->tokenizer(), a.gen.prompt);
    return stream_text(out, a.gen.prompt, join,
                       [&](const tasks::TokenCallback& on) { generate(engine, a.gen, on); });
  }
  // Several samples (or jsonl): one record each, in index order, written after the last token; a signal
  // stops the generation at the next token, before any record is written.
  auto r = generate(engine, a.gen, [](int, const tasks::GeneratedToken&) { check_interrupted(); });
  for (const auto& s : r.samples) out.emit(report::sample_record(*model, a.gen, s));
  out.end();
  return 0;
}

}  // namespace generate_cmd

Subcommand setup_generate(CLI::App& parent) {
  using namespace generate_cmd;
  auto a = std::make_shared<Args>();
  Subcommand s;
  CLI::App* app = parent.add_subcommand("generate", "Generate text from a prompt (docs/generation.md)");
  s.app = app;
  app->footer(
      R"(An ARPA n-gram model (a file where the model directory goes) samples words after the prompt read as score
-m FILE.arpa reads a line, with the same sampler, seeds and records; </s> ends a sample (docs/mixing.md).
Fixed input windows (Keras; docs/generation.md): --pad-to N predicts each token from the last N tokens
of the context (the start token, the prompt and the tokens generated so far), pre-padded with the
tokenizer's pad_id (else 0; zero vectors on a one-hot model) to exactly N and run from the zero state, as a Keras next-word loop does
(pad_sequences(maxlen=N, padding='pre') before every model.predict). --window N: the last N tokens,
unpadded. A model whose config.json has input_length uses --pad-to input_length by default (a note on
stderr says so); --stateful carries the state instead. N in [1, 1000000].
A prompt word not in the vocabulary is read as unk_token; without one it is skipped with a warning
naming it (--oov error refuses it, exit 1).)");
  add_model_option(*app, a->model);
  auto* p = app->add_option("-p,--prompt", a->prompt, "Prompt text (default: empty, start from bos/eos)");
  app->add_option("-f,--prompt-file", a->prompt_file, "Read the prompt from a file (final line end dropped)")
      ->excludes(p);
  app->add_option("-n,--max-tokens", a->gen.max_tokens, "Tokens to generate per sample, eos included")
      ->check(int_range(0, kMaxGenerateTokens))
      ->capture_default_str();
  auto& sp = a->gen.sampler;
  app->add_option("--temperature,--temp", sp.temperature, "Sampling temperature; 0 = greedy (argmax)")
      ->check(real_range(0, kMaxTemperature))
      ->capture_default_str();
  app->add_option("--top-k", sp.top_k, "Keep the K most likely tokens; 0 = off")
      ->check(int_range(0, kMaxVocab))
      ->capture_default_str();
  app->add_option("--top-p", sp.top_p, "Keep the smallest set with mass >= P; 1 = off")
      ->check(real_range(0, 1, true))
      ->capture_default_str();
  app->add_option("--min-p", sp.min_p, "Keep tokens with p >= P * p_max; 0 = off")
      ->check(real_range(0, 1))
      ->capture_default_str();
  app->add_option("--repeat-penalty", sp.repeat_penalty, "Recent tokens' probability p becomes p^R; 1 = off")
      ->check(real_range(0, kMaxRepeatPenalty, true))
      ->capture_default_str();
  app->add_option("--repeat-last-n", sp.repeat_last_n, "Recent tokens penalised; 0 = none, -1 = all")
      ->check(int_range(-1, kMaxGenerateTokens))
      ->capture_default_str();
  auto* seed =
      app->add_option("-s,--seed", a->seed,
                      "Random seed in [0, 2^64) (default: random, printed to stderr unless --temperature 0)");
  app->add_option("--boost", a->boost_file,
                  "Boosted words and phrases (PHRASE<TAB>BONUS lines, natural log) added before sampling; "
                  "the printed log-probs stay the model's");
  add_mix_mode_option(*app, a->mix_mode);
  add_mix_option(*app, a->mix,
                 "into each step's distribution before sampling; the log-probs are the mixture's");
  add_cache_options(*app, a->gen.cache, "of the prompt and the sample, applied to each step before --mix");
  app->add_option("--num-samples", a->gen.num_samples, "Samples, run as one batch")
      ->check(int_range(1, kMaxSamples))
      ->capture_default_str();
  auto& beam = a->gen.beam;
  app->add_option("--beam-size", beam.beam_size,
                  "Beam search keeping K hypotheses per step, in place of sampling; 0 = sample")
      ->check(int_range(0, tasks::kMaxBeamSize))
      ->capture_default_str();
  app->add_option("--n-best", beam.n_best,
                  "Hypotheses a beam search prints, best first (at most --beam-size)")
      ->check(int_range(1, tasks::kMaxBeamSize))
      ->capture_default_str();
  app->add_option(
         "--length-penalty", beam.length_penalty,
         "GNMT's length normalisation: a hypothesis ranks by its log-prob / ((5 + len) / 6)^A; 0 = off")
      ->check(real_range(0, tasks::kMaxLengthPenalty))
      ->capture_default_str();
  app->add_option("--no-repeat-ngram", beam.no_repeat_ngram,
                  "Beam search: no n-gram of N tokens twice in the prompt and a hypothesis; 0 = off")
      ->check(int_range(0, kMaxGenerateTokens))
      ->capture_default_str();
  app->add_option("--batch-size", beam.batch_size,
                  "Beam search: hypotheses per engine call (the results are the same); 0 = all in one")
      ->check(int_range(0, tasks::kMaxBeamSize))
      ->capture_default_str();
  repeatable(
      app->add_option("--logit-bias", a->logit_bias,
                      "TOKEN=VALUE (a word or an id; natural log, in [-100, 100]) added to the token's "
                      "log-prob before each choice; repeatable"));
  app->add_option("--allowed-words", a->allowed_words,
                  "Only these tokens (one a line, the vocabulary's spelling) and the end may be generated");
  app->add_option("--regex", a->regex, "The generated text must match this pattern (docs/generation.md)");
  repeatable(
      app->add_option("--stop", a->gen.stop, "End a sample or hypothesis at this string (kept); repeatable"));
  auto* stop = app->add_flag("--stop-at-eos,!--no-stop-at-eos", a->stop,
                             "End a sample at the eos token (default: on when the model has one)");
  add_oov_option(*app, a->gen.oov);
  add_window_options(*app, a->window);
  add_threads_option(*app, a->threads);
  add_precision_option(*app, a->precision);
  add_fold_option(*app, a->fold);
  add_format_option(*app, a->format, {Format::Text, Format::Jsonl});
  s.check = [a, stop, seed] {
    a->seeded = seed->count() > 0;
    if (stop->count() > 0) a->gen.stop_at_eos = a->stop;
    check(*a);
  };
  s.run = [a]() -> int { return run(*a); };
  return s;
}

}  // namespace lstmlm::cli
