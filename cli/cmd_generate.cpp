// `lstmlm generate`: options -> tasks/generate -> text (streamed for one sample) or jsonl
// (docs/generation.md).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "commands.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "output.hpp"

namespace lstmlm::cli {

namespace {

struct Args {
  std::string model;
  std::string prompt, prompt_file;
  GenerateOptions gen;
  std::string seed;  // empty: a random seed, printed to stderr
  bool stop = true;
  int threads = 0;
  std::string format = "text";
};

std::string read_prompt_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot open the prompt file");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw InputError(path + ": read error");
  if (s.rfind("\xEF\xBB\xBF", 0) == 0) s.erase(0, 3);  // a UTF-8 BOM is not text
  // The file's final line end ends the prompt; it is not a line break to continue from.
  if (!s.empty() && s.back() == '\n') s.pop_back();
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

uint64_t parse_seed(const std::string& s) {
  size_t used = 0;
  unsigned long long v = 0;
  try {
    if (s.empty() || s[0] == '-') throw std::invalid_argument(s);
    v = std::stoull(s, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size())
    throw UsageError("--seed must be an integer in [0, 2^64), got '" + s + "'");
  return v;
}

// The printed form of one sample: the prompt as given, then the generated text; in a word model the two are
// joined by a space. Built incrementally so streaming and the final text agree byte for byte.
class TextJoin {
 public:
  TextJoin(const Tokenizer& tok, const std::string& prompt)
      : tok_(tok), words_(tok.config().type == TokenizerType::Word), any_(!prompt.empty()) {}
  // The text a token adds ("" for special tokens).
  std::string piece(int32_t id) {
    if (tok_.is_special(id)) return "";
    const int32_t one[] = {id};
    std::string p = tok_.detokenize(one);
    if (words_ && any_) p.insert(0, " ");
    any_ = true;
    return p;
  }

 private:
  const Tokenizer& tok_;
  bool words_, any_;
};

// ordered_json: keys in the documented order (sample, seed, prompt, text, tokens, total_logprob, ...).
nlohmann::ordered_json sample_json(const Model& model, const Args& a, const GeneratedSample& s) {
  nlohmann::ordered_json toks = nlohmann::ordered_json::array();
  for (const auto& t : s.tokens)
    toks.push_back(nlohmann::ordered_json{{"token", model.vocab().token(t.id)},
                                          {"id", t.id},
                                          {"prob", std::exp(static_cast<double>(t.logprob))},
                                          {"logprob", static_cast<double>(t.logprob)}});
  auto ids = s.ids();
  return nlohmann::ordered_json{{"sample", s.index},
                                {"seed", a.gen.seed},
                                {"prompt", a.gen.prompt},
                                {"text", model.tokenizer().detokenize(ids)},
                                {"tokens", std::move(toks)},
                                {"total_logprob", s.total_logprob},
                                {"stopped_at_eos", s.stopped_at_eos}};
}

int run(Args& a) {
  if (a.format != "text" && a.format != "jsonl")
    throw UsageError("--output-format must be text or jsonl, got '" + a.format + "'");
  if (!a.prompt_file.empty())
    a.gen.prompt = read_prompt_file(a.prompt_file);
  else
    a.gen.prompt = a.prompt;
  if (a.seed.empty()) {
    a.gen.seed = random_seed();
    std::fprintf(stderr, "seed: %llu\n", static_cast<unsigned long long>(a.gen.seed));
  } else {
    a.gen.seed = parse_seed(a.seed);
  }
  a.gen.sampler.validate();
  auto model = Model::load(a.model);
  for (const auto& w : model->warnings()) std::fprintf(stderr, "lstmlm: warning: %s\n", w.c_str());
  // Validate the prompt before any output, and warn about words the model does not know.
  for (const auto& t : prompt_context(*model, a.gen.prompt).tokens)
    if (t.oov)
      std::fprintf(stderr, "lstmlm: warning: prompt: '%s' is not in the vocabulary, read as unk\n",
                   t.text.c_str());
  Engine engine(model, a.threads);
  Output out;

  if (a.format == "jsonl") {
    auto r = generate(engine, a.gen);
    for (const auto& s : r.samples)
      out.line(
          sample_json(*model, a, s).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    return 0;
  }
  if (a.gen.num_samples == 1) {
    // Streamed: the prompt at once, then each token as it is chosen.
    TextJoin join(model->tokenizer(), a.gen.prompt);
    out.write(a.gen.prompt);
    out.flush();
    generate(engine, a.gen, [&](int, const GeneratedToken& t) {
      out.write(join.piece(t.id));
      out.flush();
    });
    out.write("\n");
    return 0;
  }
  // Several samples: each after a header line of its own, in index order.
  auto r = generate(engine, a.gen);
  for (const auto& s : r.samples) {
    out.line("=== sample " + std::to_string(s.index) + " ===");
    TextJoin join(model->tokenizer(), a.gen.prompt);
    std::string text = a.gen.prompt;
    for (const auto& t : s.tokens) text += join.piece(t.id);
    out.line(text);
  }
  return 0;
}

}  // namespace

Subcommand setup_generate(CLI::App& parent) {
  auto a = std::make_shared<Args>();
  Subcommand s;
  CLI::App* app = parent.add_subcommand("generate", "Generate text from a prompt (docs/generation.md)");
  s.app = app;
  app->add_option("-m,--model", a->model, "Model directory")->required();
  auto* p = app->add_option("-p,--prompt", a->prompt, "Prompt text (default: empty, start from bos/eos)");
  app->add_option("--prompt-file", a->prompt_file, "Read the prompt from a file (final line end dropped)")
      ->excludes(p);
  app->add_option("-n,--max-tokens", a->gen.max_tokens, "Tokens to generate per sample, eos included")
      ->capture_default_str();
  auto& sp = a->gen.sampler;
  app->add_option("--temperature", sp.temperature, "Sampling temperature; 0 = greedy (argmax)")
      ->capture_default_str();
  app->add_option("--top-k", sp.top_k, "Keep the K most likely tokens; 0 = off")->capture_default_str();
  app->add_option("--top-p", sp.top_p, "Keep the smallest set with mass >= P; 1 = off")
      ->capture_default_str();
  app->add_option("--min-p", sp.min_p, "Keep tokens with p >= P * p_max; 0 = off")->capture_default_str();
  app->add_option("--repeat-penalty", sp.repeat_penalty, "Recent tokens' probability p becomes p^R; 1 = off")
      ->capture_default_str();
  app->add_option("--repeat-last-n", sp.repeat_last_n, "Recent tokens penalised; 0 = none, -1 = all")
      ->capture_default_str();
  app->add_option("--seed", a->seed, "Random seed (default: random, printed to stderr)");
  app->add_option("--num-samples", a->gen.num_samples, "Samples, run as one batch")->capture_default_str();
  auto* stop = app->add_flag("--stop-at-eos,!--no-stop-at-eos", a->stop,
                             "End a sample at the eos token (default: on when the model has one)");
  app->add_option("--threads", a->threads, "Engine threads; 0 = one per core")->capture_default_str();
  app->add_option("--output-format", a->format, "text | jsonl")->capture_default_str();
  s.run = [a, stop]() -> int {
    if (stop->count() > 0) a->gen.stop_at_eos = a->stop;
    return run(*a);
  };
  return s;
}

}  // namespace lstmlm::cli
