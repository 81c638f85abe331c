#include "engine/thread_pool.hpp"

#include <string>
#include <system_error>

#include "lstmlm/error.hpp"

namespace lstmlm::engine {

ThreadPool::ThreadPool(int threads) {
  // The workers started before a failure wait on this pool's condition variable: stop and join them
  // before the members are destroyed, or they would wait forever on a destroyed object.
  try {
    workers_.reserve(static_cast<size_t>(threads > 1 ? threads - 1 : 0));
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { loop(i); });
  } catch (const std::system_error& e) {
    const size_t started = workers_.size() + 1;
    shutdown();
    throw UsageError("engine: could not start thread " + std::to_string(started + 1) + " of " +
                     std::to_string(threads) + " (" + e.what() + "); use fewer threads");
  } catch (...) {
    shutdown();
    throw;
  }
}

ThreadPool::~ThreadPool() { shutdown(); }

void ThreadPool::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::run(const std::function<void(int)>& fn) {
  if (workers_.empty()) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    pending_ = static_cast<int>(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  start_cv_.notify_all();
  std::exception_ptr mine;
  try {
    fn(0);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  fn_ = nullptr;
  if (mine) std::rethrow_exception(mine);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::loop(int index) {
  unsigned long seen = 0;
  for (;;) {
    const std::function<void(int)>* fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
    }
    std::exception_ptr err;
    try {
      (*fn)(index);
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (err && !error_) error_ = err;
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

}  // namespace lstmlm::engine
