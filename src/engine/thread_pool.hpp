// A small persistent pool: run(fn) calls fn(i) for every i in [0, size()), i = 0 on the calling thread,
// and returns when all are done. Owned by one Engine; not reentrant. A thread that cannot be started is a
// UsageError after the started ones are joined.
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lstmlm::engine {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // The first exception thrown by any fn(i) is rethrown here after all have finished.
  void run(const std::function<void(int)>& fn);

 private:
  void loop(int index);
  void shutdown();
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int)>* fn_ = nullptr;
  unsigned long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace lstmlm::engine
