// `lstmlm predict`: the top-N next tokens after each context (arguments, or stdin lines in batches).
#include <thread>

#include "commands.hpp"
#include "json_text.hpp"
#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "output.hpp"

namespace lstmlm::cli {

namespace {

constexpr const char* kHelp =
    R"(Predicts the next token after each CONTEXT (or after each line of stdin when no
CONTEXT is given; stdin is read in blocks and batched).

Context: text is tokenized like `score` input (see `lstmlm score --help`) and, when the model has a
bos_token (else an eos_token), that token is fed first, so predict agrees with score's sentence mode
(--no-bos turns this off). With --ids each context is whitespace-separated token ids, fed exactly as given.
--pad-to N left-pads the ids with the tokenizer's pad_id to length N and keeps the last N ids when longer
(Keras pad_sequences(padding='pre', truncating='pre')); no start token is added then. An OOV word is fed
as unk_token, or skipped without one (--oov error refuses it). A context that leaves nothing to feed
(empty, on a model without bos/eos and without --pad-to) is an error (exit 1).

Output (--top N candidates, by descending probability, ties by ascending id; --top 0 = whole vocabulary):
  jsonl: one object per context, in input order:
    {"context": "<text as given>", "ids": [fed ids...],
     "top": [{"token": str, "id": int, "prob": p, "logprob": ln p}, ...]}
    numbers with 9 significant digits (round-trip float32).
  text: per context a line "> CONTEXT", then one line per candidate:
    "RANK<TAB>TOKEN<TAB>id=ID<TAB>prob=P<TAB>logprob=LN_P" (prob with 6 decimals, logprob with 4).)";

struct Opts {
  std::string model_dir;
  std::vector<std::string> contexts;
  std::string format = "text";
  tasks::PredictOptions task;
  bool no_bos = false;
  std::string oov = "skip";
  int threads = 0;
};

void write_one(Output& out, const std::string& format, const std::string& context,
               const tasks::Prediction& p) {
  std::string s;
  if (format == "jsonl") {
    s = "{\"context\": " + jstr(context) + ", \"ids\": [";
    for (size_t i = 0; i < p.ids.size(); ++i) s += (i ? ", " : "") + std::to_string(p.ids[i]);
    s += "], \"top\": [";
    for (size_t i = 0; i < p.top.size(); ++i) {
      const auto& c = p.top[i];
      s += (i ? ", " : "");
      s += "{\"token\": " + jstr(c.token) + ", \"id\": " + std::to_string(c.id) +
           ", \"prob\": " + jnum(c.prob) + ", \"logprob\": " + jnum(c.logprob) + "}";
    }
    s += "]}\n";
  } else {
    s = "> " + context + "\n";
    char buf[64];
    for (size_t i = 0; i < p.top.size(); ++i) {
      const auto& c = p.top[i];
      std::snprintf(buf, sizeof buf, "\tprob=%.6f\tlogprob=%.4f\n", c.prob, static_cast<double>(c.logprob));
      s += std::to_string(i + 1) + "\t" + c.token + "\tid=" + std::to_string(c.id) + buf;
    }
  }
  out.write(s);
}

int run(const Opts& o) {
  tasks::PredictOptions task = o.task;
  task.add_start = !o.no_bos;
  task.oov = o.oov == "error" ? tasks::OovPolicy::Error : tasks::OovPolicy::Skip;
  auto model = Model::load(o.model_dir);
  Engine engine(model, o.threads);
  Output out;
  if (!o.contexts.empty()) {
    auto preds = tasks::predict(engine, o.contexts, task, "argument", 1);
    for (size_t i = 0; i < preds.size(); ++i) write_one(out, o.format, o.contexts[i], preds[i]);
    return 0;
  }
  LineReader in({});
  in.next_file();
  const size_t block = 4096;
  std::vector<std::string> lines;
  uint64_t first = 0;
  while (in.next_block(lines, block, first)) {
    auto preds = tasks::predict(engine, lines, task, "stdin", first);
    for (size_t i = 0; i < preds.size(); ++i) write_one(out, o.format, lines[i], preds[i]);
    out.flush();
  }
  return 0;
}

}  // namespace

Subcommand setup_predict(CLI::App& parent) {
  auto o = std::make_shared<Opts>();
  Subcommand s;
  s.app = parent.add_subcommand("predict", "Top-N next tokens after each context");
  s.app->footer(kHelp);
  s.app->add_option("-m,--model", o->model_dir, "Model directory")->required();
  s.app->add_option("context", o->contexts, "Contexts (default: one per line on stdin)");
  s.app->add_option("--top", o->task.top, "Candidates per context; 0 = whole vocabulary")
      ->capture_default_str();
  s.app->add_option("--output-format", o->format, "text or jsonl")
      ->check(CLI::IsMember({"text", "jsonl"}))
      ->capture_default_str();
  s.app->add_flag("--ids", o->task.ids_input, "Contexts are whitespace-separated token ids");
  s.app
      ->add_option("--pad-to", o->task.pad_to, "Left-pad/truncate ids to N with pad_id (Keras pad_sequences)")
      ->check(CLI::PositiveNumber);
  s.app->add_flag("--no-bos", o->no_bos, "Do not feed bos_token/eos_token before a text context");
  s.app->add_option("--oov", o->oov, "OOV words when the model has no unk_token: skip or error")
      ->check(CLI::IsMember({"skip", "error"}))
      ->capture_default_str();
  s.app->add_option("--batch-size", o->task.batch_size, "Contexts per engine batch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  s.app->add_option("--threads", o->threads, "Threads (0 = one per core)")->check(CLI::NonNegativeNumber);
  s.run = [o]() -> int { return run(*o); };
  return s;
}

}  // namespace lstmlm::cli
