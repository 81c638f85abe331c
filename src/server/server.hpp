// `lstmlm serve`: a model behind HTTP (docs/serving.md). The CLI parses the options; run() serves until
// SIGINT/SIGTERM/SIGHUP, then stops accepting, finishes the requests in flight and returns.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "lstmlm/precision.hpp"

namespace lstmlm::server {

struct Options {
  std::string model_dir;
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (printed on stderr)
  std::string
      api_key;      // non-empty: every endpoint but /health and the page needs "Authorization: Bearer KEY"
  int threads = 0;  // per engine; 0 = one per core
  Precision precision = Precision::Fp32;
  EmbeddingFold fold = EmbeddingFold::Auto;
  // Connections served at once. A worker blocked on its socket costs a thread's stack, not a core: as
  // many as the clients a busy server has keeps each on its connection, where fewer make them take turns
  // and reconnect (64 clients on 8 workers answered 40% fewer requests).
  int http_threads = 64;
  int max_batch = 64;  // rows the scheduler runs in one engine call
  // How long the scheduler waits for more rows after the first. 0: none; the requests that arrive while the
  // engine runs form the next batch, so a lone request pays no wait and a busy server still batches.
  int batch_wait_us = 0;
  int max_queue = 256;      // scheduled requests waiting; past it: 503 with Retry-After
  int max_sessions = 1024;  // past it the least recently used session is evicted
  int session_ttl_s = 600;  // a session idle this long is removed
  size_t max_body_bytes = 1 << 20;
  size_t max_tokens = 1 << 16;  // tokens one request may feed or generate
  int timeout_s = 30;           // reading a request, writing a response
  std::string
      boost_file;  // non-empty: boosts applied to predict, generate and sessions unless "boost": false
  // --mix MODEL.arpa:WEIGHT: ARPA models mixed into /v1/score and /v1/rescore unless "mix": false.
  std::vector<std::string> mix;
  std::string mix_mode = "linear";  // --mix-mode: linear or loglinear
  // --backward-model DIR: a right-to-left model weighed into /v1/rescore unless "backward": false.
  std::string backward_model;
};

// Lines of progress for stderr ("listening on http://127.0.0.1:8080").
using Log = std::function<void(const std::string&)>;

// Serves until a signal; returns 0 after a clean stop. Throws UsageError (a port in use, a bad host) and
// ModelError (the model) before serving.
int run(const Options& options, const Log& log, const std::function<int()>& pending_signal);

}  // namespace lstmlm::server
