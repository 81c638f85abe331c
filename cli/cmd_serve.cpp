// `lstmlm serve`: the model behind HTTP (docs/serving.md). Options here; the server is src/server.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/input.hpp"
#include "options.hpp"
#include "output.hpp"
#include "server/server.hpp"

namespace lstmlm::cli {

namespace serve_cmd {

constexpr const char* kHelp =
    R"(Serves the model over HTTP until SIGINT, SIGTERM or SIGHUP, then stops accepting, finishes the
requests in flight and exits 0. Binds 127.0.0.1 (this machine only) unless --host says otherwise.

Endpoints (JSON in and out; the records are the CLI's jsonl ones, docs/serving.md):
  GET  /health                        200 {"status": "ok"}, 503 while the model loads (never needs a key)
  GET  /v1/models                     what `lstmlm info --json` prints
  POST /v1/score                      {"text": "one sentence per line", ...} -> {"lines": [...], "summary": {...}}
  POST /v1/predict                    {"context": "...", "top": N, "prefix": "ki"} -> the record `lstmlm predict` prints
  POST /v1/generate                   {"prompt": "...", "max_tokens": N, "seed": S, ..., "stream": bool}
  POST /v1/rescore                    {"hyps": [rescore's jsonl records], "weights": {...}, ...} -> {"hyps", "summary"}
  POST /v1/tokenize, /v1/detokenize   {"text": "..."} -> tokens; {"ids": [...]} -> text
  POST /v1/sessions                   {"bos": true} or {"state": {...}} -> {"id": "...", "tokens": n}
  POST /v1/sessions/ID/advance        {"text": "..."} or {"ids": [...]}, "prefix": "ki" -> {"words": [...], "top": [...]}
  GET  /v1/sessions/ID[/state], DELETE /v1/sessions/ID
  GET  /metrics                       Prometheus text format
  GET  /                              a page: suggestions as you type, a coloured generation
Errors: {"error": {"code": STATUS, "message": "one line"}}: 400 bad request (the field named), 401 no key,
404, 413 too large, 503 busy (Retry-After) or loading.
Progress and the address go to stderr: "lstmlm serve: listening on http://127.0.0.1:PORT".)";

struct Args {
  server::Options o;
  std::string api_key_file;
};

// A key turns authentication on: an empty one would leave it off, silently; a control byte (a NUL from
// /dev/zero, a newline) cannot be typed in an Authorization header.
void check_key(const std::string& key, const std::string& option) {
  if (key.empty())
    throw UsageError(option +
                     ": an empty key would leave every endpoint open: give a key, or leave the option out");
  for (unsigned char c : key)
    if (c < 0x20 || c == 0x7f)
      throw UsageError(option + ": the key holds a control byte; a key is printable characters");
}

}  // namespace serve_cmd

Subcommand setup_serve(CLI::App& parent) {
  using namespace serve_cmd;
  auto a = std::make_shared<Args>();
  Subcommand s;
  s.app = parent.add_subcommand("serve", "Serve the model over HTTP: score, predict, generate, sessions");
  s.app->footer(kHelp);
  add_model_option(*s.app, a->o.model_dir);
  s.app->add_option("--host", a->o.host, "Address to bind (127.0.0.1: this machine only)")
      ->capture_default_str();
  s.app->add_option("--port", a->o.port, "Port (0: any free port, printed on stderr)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  auto* key =
      s.app->add_option("--api-key", a->o.api_key,
                        "Require 'Authorization: Bearer KEY' on every endpoint but /health and the page");
  s.app->add_option("--api-key-file", a->api_key_file, "Read the key from the first line of FILE (not in ps)")
      ->excludes(key);
  add_threads_option(*s.app, a->o.threads);
  add_precision_option(*s.app, a->o.precision);
  add_fold_option(*s.app, a->o.fold);
  s.app->add_option("--http-threads", a->o.http_threads, "Connections served at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  s.app->add_option("--max-batch", a->o.max_batch, "Rows of concurrent requests run in one engine call")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  s.app
      ->add_option("--batch-wait-us", a->o.batch_wait_us,
                   "How long the scheduler waits for more rows (us); 0: it runs what is queued at once")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  s.app->add_option("--max-queue", a->o.max_queue, "Requests waiting for the scheduler; past it: 503")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  s.app
      ->add_option("--max-sessions", a->o.max_sessions, "Sessions held; past it the least recently used goes")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  s.app->add_option("--session-ttl", a->o.session_ttl_s, "Seconds a session may stay idle")
      ->check(CLI::Range(1, 31536000))
      ->capture_default_str();
  s.app->add_option("--max-body", a->o.max_body_bytes, "Largest request body (bytes); larger: 413")
      ->check(CLI::Range(size_t{64}, size_t{1} << 30))
      ->capture_default_str();
  s.app->add_option("--max-tokens", a->o.max_tokens, "Tokens one request may feed or generate; more: 413")
      ->check(CLI::Range(size_t{1}, size_t{1} << 26))
      ->capture_default_str();
  s.app->add_option("--timeout", a->o.timeout_s, "Seconds to read a request or write a response")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  s.app
      ->add_option(
          "--boost", a->o.boost_file,
          "Boosted words and phrases (PHRASE<TAB>BONUS lines, natural log) for predict, generate and "
          "sessions; a request's \"boost\": false turns them off")
      ->check(CLI::ExistingFile);
  repeatable(
      s.app->add_option("--mix", a->o.mix,
                        "Mix an ARPA n-gram model into /v1/score, /v1/rescore, /v1/predict and /v1/generate: "
                        "MODEL:WEIGHT, repeatable, loaded at start; a request's \"mix\": false turns it off "
                        "(docs/mixing.md)"));
  add_mix_mode_option(*s.app, a->o.mix_mode);
  s.app->add_option(
      "--backward-model", a->o.backward_model,
      "A right-to-left model weighed into /v1/rescore: LM = (1 - W) forward + W backward (ln p), W "
      "a request's \"backward_weight\" (0.5); \"backward\": false leaves it out (docs/rescoring.md)");
  s.check = [a, key] {
    if (NgramModel::is_arpa(a->o.model_dir))  // before the server listens: it loads its model after
      throw UsageError(
          "-m " + a->o.model_dir +
          ": an ARPA n-gram model; serve needs a neural model directory (--mix MODEL.arpa:WEIGHT "
          "mixes an ARPA model into it)");
    if (key->count() > 0) check_key(a->o.api_key, "--api-key");
    if (!a->api_key_file.empty()) {
      std::string text;
      try {
        text = tasks::read_small_file(a->api_key_file, 4096);  // a key is a line: far less
      } catch (const InputError& e) {
        throw UsageError("--api-key-file: " + e.message());
      }
      a->o.api_key = text.substr(0, text.find('\n'));
      if (!a->o.api_key.empty() && a->o.api_key.back() == '\r') a->o.api_key.pop_back();
      if (a->o.api_key.empty())
        throw UsageError("--api-key-file: " + a->api_key_file + " holds no key on its first line");
      check_key(a->o.api_key, "--api-key-file");
    }
  };
  s.run = [a]() -> int {
    auto log = [](const std::string& line) { print_diagnostic("lstmlm serve: ", line); };
    return server::run(a->o, log, [] { return pending_signal(); });
  };
  return s;
}

}  // namespace lstmlm::cli
