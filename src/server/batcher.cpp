#include "server/batcher.hpp"

#include <chrono>
#include <limits>
#include <utility>

#include "server/http_error.hpp"

namespace lstmlm::server {

struct Batcher::Job {
  enum class Kind { Predict, Advance } kind;
  // Predict
  std::vector<std::string> contexts;
  tasks::PredictOptions opt;
  std::vector<tasks::Prediction> predictions;
  // Advance
  Session* session = nullptr;
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
  size_t rows() const { return kind == Kind::Predict ? contexts.size() : 1; }
  // Written by the leader while it runs the batch (answered, error), published under the mutex (done).
  bool answered = false;
  std::exception_ptr error;
  void succeed() { answered = true; }
  void fail(std::exception_ptr e) {
    if (answered) return;
    error = std::move(e);
    answered = true;
  }
  // Under the mutex: the answer is in, or the lead was handed to this job's thread.
  bool done = false, lead = false;
  std::condition_variable wake;  // one thread waits on it: no herd woken per batch
};

namespace {

bool same(const tasks::PredictOptions& a, const tasks::PredictOptions& b) {
  return a.top == b.top && a.window.mode == b.window.mode && a.window.length == b.window.length &&
         a.ids_input == b.ids_input && a.add_start == b.add_start && a.oov == b.oov && a.prefix == b.prefix &&
         a.boost == b.boost && a.mix == b.mix && a.cache == b.cache;
}

}  // namespace

Batcher::Batcher(std::shared_ptr<const Model> model, const EngineOptions& options, int max_batch, int wait_us,
                 size_t max_queue, Metrics& metrics)
    : model_(model),
      engine_(std::move(model), options),
      max_batch_(std::max(1, max_batch)),
      wait_us_(std::max(0, wait_us)),
      max_queue_(max_queue),
      metrics_(metrics) {}

Batcher::~Batcher() {
  std::unique_lock lock(mu_);
  arrived_.wait(lock, [&] { return inside_ == 0; });
}

size_t Batcher::depth() {
  const std::lock_guard lock(mu_);
  return queue_.size();
}

void Batcher::submit(const std::shared_ptr<Job>& job) {
  std::unique_lock lock(mu_);
  if (queue_.size() >= max_queue_)
    throw HttpError(503, "the server is busy: " + std::to_string(queue_.size()) +
                             " requests are waiting (--max-queue); retry later");
  queue_.push_back(job);
  ++inside_;
  arrived_.notify_all();  // a leader waiting for more rows
  while (!job->done) {
    if (job->lead || !leading_) {
      job->lead = false;
      leading_ = true;
      // Hand the lead to the oldest request still queued (perhaps this one, if its rows did not fit).
      auto hand_off = [&] {
        leading_ = !queue_.empty();
        if (leading_) {
          queue_.front()->lead = true;
          queue_.front()->wake.notify_one();
        }
      };
      try {
        lead(lock);  // throws only before it takes any job (bad_alloc), with the lock held
      } catch (...) {
        std::erase(queue_, job);
        hand_off();
        --inside_;
        arrived_.notify_all();
        throw;
      }
      hand_off();
      continue;
    }
    job->wake.wait(lock);
  }
  --inside_;
  arrived_.notify_all();  // the destructor
  if (job->error) std::rethrow_exception(job->error);
}

std::vector<tasks::Prediction> Batcher::predict(const std::vector<std::string>& contexts,
                                                const tasks::PredictOptions& opt) {
  auto job = std::make_shared<Job>();
  job->kind = Job::Kind::Predict;
  job->contexts = contexts;
  job->opt = opt;
  submit(job);
  return std::move(job->predictions);
}

void Batcher::advance(Session& s, const std::vector<int32_t>& ids, std::vector<float>& logprobs) {
  auto job = std::make_shared<Job>();
  job->kind = Job::Kind::Advance;
  job->session = &s;
  job->ids = ids;
  submit(job);
  logprobs = std::move(job->logprobs);
}

void Batcher::lead(std::unique_lock<std::mutex>& lock) {
  auto rows = [&] {
    size_t n = 0;
    for (const auto& j : queue_) n += j->rows();
    return n;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(wait_us_);
  while (wait_us_ > 0 && rows() < size_t(max_batch_) &&
         arrived_.wait_until(lock, deadline) != std::cv_status::timeout) {
  }
  std::vector<std::shared_ptr<Job>> jobs;
  jobs.reserve(queue_.size());  // no allocation below: a job is either queued or in this batch
  size_t n = 0;
  while (!queue_.empty() && (jobs.empty() || n + queue_.front()->rows() <= size_t(max_batch_))) {
    n += queue_.front()->rows();
    jobs.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  lock.unlock();
  std::vector<std::shared_ptr<Job>> predicts, advances;
  try {
    for (auto& j : jobs) (j->kind == Job::Kind::Predict ? predicts : advances).push_back(j);
    run_predicts(predicts);
    run_advances(advances);
  } catch (...) {
    for (auto& j : jobs) j->fail(std::current_exception());
  }
  lock.lock();
  for (auto& j : jobs) {
    j->done = true;
    j->wake.notify_one();
  }
}

void Batcher::run_predicts(std::vector<std::shared_ptr<Job>>& jobs) {
  std::vector<bool> taken(jobs.size(), false);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (taken[i]) continue;
    // The jobs with the same options run as one call: tasks::predict batches their rows.
    std::vector<size_t> group;
    std::vector<std::string> contexts;
    for (size_t k = i; k < jobs.size(); ++k)
      if (!taken[k] && same(jobs[i]->opt, jobs[k]->opt)) {
        taken[k] = true;
        group.push_back(k);
        contexts.insert(contexts.end(), jobs[k]->contexts.begin(), jobs[k]->contexts.end());
      }
    try {
      tasks::PredictOptions opt = jobs[i]->opt;
      opt.batch_size = max_batch_;
      auto preds = tasks::predict(engine_, contexts, opt, "context", 1);
      metrics_.batch(static_cast<int>(contexts.size()));
      size_t at = 0;
      for (size_t k : group) {
        auto& j = *jobs[k];
        j.predictions.assign(std::make_move_iterator(preds.begin() + std::ptrdiff_t(at)),
                             std::make_move_iterator(preds.begin() + std::ptrdiff_t(at + j.contexts.size())));
        at += j.contexts.size();
        j.succeed();
      }
    } catch (...) {
      // One request's bad context fails the call: each request runs alone, so only its own fails.
      for (size_t k : group) {
        auto& j = *jobs[k];
        try {
          tasks::PredictOptions opt = j.opt;
          opt.batch_size = max_batch_;
          j.predictions = tasks::predict(engine_, j.contexts, opt, "context", 1);
          metrics_.batch(static_cast<int>(j.contexts.size()));
          j.succeed();
        } catch (...) {
          j.fail(std::current_exception());
        }
      }
    }
  }
}

void Batcher::run_advances(std::vector<std::shared_ptr<Job>>& jobs) {
  if (jobs.empty()) return;
  try {
    Sequences inputs;
    std::vector<tasks::Stream*> streams;
    for (auto& j : jobs) {
      inputs.push_back(j->ids);
      streams.push_back(j->session);
    }
    std::vector<std::vector<float>> lps;
    tasks::advance(engine_, streams, inputs, &lps);
    metrics_.batch(static_cast<int>(jobs.size()));
    for (size_t r = 0; r < jobs.size(); ++r) {
      jobs[r]->logprobs = std::move(lps[r]);
      jobs[r]->succeed();
    }
  } catch (...) {
    for (auto& j : jobs) j->fail(std::current_exception());
  }
}

}  // namespace lstmlm::server
