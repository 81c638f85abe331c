// The scheduler: one thread gathers the rows of concurrent requests (predictions, session advances) into
// the engine's batches, up to --max-batch rows, waiting at most --batch-wait-us after the first. The engine
// is batch invariant, so a row's numbers are the same bits whatever it shares a batch with: each response
// is what the CLI (or a lone request) gives. A full queue is refused at once (HttpError 503).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "server/metrics.hpp"
#include "server/sessions.hpp"

namespace lstmlm::server {

class Batcher {
 public:
  Batcher(std::shared_ptr<const Model> model, const EngineOptions& options, int max_batch, int wait_us,
          size_t max_queue, Metrics& metrics);
  ~Batcher();  // finishes every queued request, then stops
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // tasks::predict over `contexts`, batched with other requests; throws what it throws (InputError).
  std::vector<tasks::Prediction> predict(const std::vector<std::string>& contexts,
                                         const tasks::PredictOptions& opt);
  // Feeds `ids` (each in the vocabulary) to the session, whose lock the caller holds: `logprobs[i]` is
  // ln p(ids[i]) (NaN for a first token without context) and s.next the distribution that follows.
  void advance(Session& s, const std::vector<int32_t>& ids, std::vector<float>& logprobs);
  size_t depth();

 private:
  struct Job;
  void submit(const std::shared_ptr<Job>& job);
  void loop();
  void run_predicts(std::vector<std::shared_ptr<Job>>& jobs);
  void run_advances(std::vector<std::shared_ptr<Job>>& jobs);
  std::shared_ptr<const Model> model_;
  Engine engine_;
  int max_batch_, wait_us_;
  size_t max_queue_;
  Metrics& metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lstmlm::server
