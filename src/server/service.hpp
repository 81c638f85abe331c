// The endpoints, as functions from a request body to a response body: JSON in, JSON out, with the
// CLI's records (lstmlm/report) so every field name and number is what `lstmlm ... --output-format jsonl`
// prints. HTTP (routes, auth, status codes) is server.cpp's; errors are thrown (HttpError, or the
// library's UsageError/InputError, which server.cpp answers with 400).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "lstmlm/engine_pool.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/ngram.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/mix.hpp"
#include "server/batcher.hpp"
#include "server/metrics.hpp"
#include "server/request.hpp"
#include "server/server.hpp"
#include "server/sessions.hpp"

namespace lstmlm::server {

class Service {
 public:
  Service(const Options& options, std::shared_ptr<const Model> model);

  std::string models() const;
  std::string score(const std::string& body);
  std::string predict(const std::string& body);
  std::string rescore(const std::string& body);
  std::string tokenize(const std::string& body) const;
  std::string detokenize(const std::string& body) const;

  struct GenerateRequest {
    tasks::GenerateOptions options;
    bool stream = false;
  };
  GenerateRequest parse_generate(const std::string& body) const;
  std::string generate(const GenerateRequest& r);
  // Streams one Server-Sent Event per generated token, then one per sample; `write` returns false when
  // the client is gone, which stops the generation.
  void generate_stream(const GenerateRequest& r, const std::function<bool(const std::string&)>& write);
  // A beam search's hypotheses as JSON records, best first (with beam_size).
  std::vector<std::string> beam_records(const GenerateRequest& r);

  std::string create_session(const std::string& body);
  std::string advance(const std::string& id, const std::string& body);
  std::string session_info(const std::string& id);
  void delete_session(const std::string& id);
  std::string export_session(const std::string& id);

  std::string metrics_text();
  void sweep();  // removes the sessions idle past the TTL
  Metrics& metrics() { return metrics_; }

 private:
  std::shared_ptr<Session> session(const std::string& id);
  std::vector<int32_t> ids_of(const std::string& text, bool oov_error, std::vector<Token>* tokens) const;
  Options opt_;
  std::shared_ptr<const Model> model_;
  Metrics metrics_;
  EnginePool pool_;  // score and generate: one engine per request
  Batcher batcher_;  // predict and sessions: rows of concurrent requests in one engine call
  SessionStore sessions_;
  int32_t start_ = -1;                                 // bos_token, else eos_token, else none
  std::shared_ptr<const tasks::Boost> boost_;          // --boost FILE, or none
  std::shared_ptr<const tasks::Completer> completer_;  // word models: the prefix index, built once
  std::shared_ptr<const tasks::MixPlan> mix_;          // --mix, or none
  std::shared_ptr<const tasks::MixRow> mix_row_;       // the same over the model's ids: predict, generate
  std::unique_ptr<EnginePool> backward_;               // --backward-model: rescore's right-to-left engines
  // The states after j pads of a Pad window (pad_to, or a Keras model's input_length), kept across
  // requests: every engine here has the server's precision and layout, so they share them.
  std::shared_ptr<tasks::PadStates> pad_states_;
  // The mixture a request asks for: the server's unless its field "mix" is false.
  std::shared_ptr<const tasks::MixPlan> mix_of(Body& b) const;
  // The mixture as rows (predict, generate): a 400 when the server's --mix holds a neural model.
  std::shared_ptr<const tasks::MixRow> row_mix_of(Body& b) const;
  // The boost a request asks for: the server's unless its field "boost" is false.
  std::shared_ptr<const tasks::Boost> boost_of(Body& b) const;
};

}  // namespace lstmlm::server
