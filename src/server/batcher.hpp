// The scheduler: the rows of concurrent requests (predictions, session advances) run in the engine's
// batches, up to --max-batch rows, waiting at most --batch-wait-us after the first. No thread of its own:
// the request threads take turns as the leader, which runs one batch of what is queued; a request that
// finds no leader leads at once, so a lone request pays no hand-off between threads (each wake-up costs
// tens of microseconds on a busy or virtual machine). After its batch the leader hands the lead to the
// oldest waiting request and returns its own answer. The engine is batch invariant, so a row's numbers are
// the same bits whatever it shares a batch with: each response is what the CLI (or a lone request) gives.
// A full queue is refused at once (HttpError 503).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
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
  ~Batcher();  // waits for every queued request to be answered
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
  // Takes up to --max-batch rows off the queue (the caller leads and holds `lock`), runs them unlocked.
  void lead(std::unique_lock<std::mutex>& lock);
  void run_predicts(std::vector<std::shared_ptr<Job>>& jobs);
  void run_advances(std::vector<std::shared_ptr<Job>>& jobs);
  std::shared_ptr<const Model> model_;
  Engine engine_;
  int max_batch_, wait_us_;
  size_t max_queue_;
  Metrics& metrics_;
  std::mutex mu_;
  std::condition_variable arrived_;  // a row queued (for a leader waiting --batch-wait-us), a request left
  std::deque<std::shared_ptr<Job>> queue_;
  bool leading_ = false;  // a request thread leads: runs a batch, or has been handed the lead
  int inside_ = 0;        // request threads in submit(): the destructor waits for none
};

}  // namespace lstmlm::server
