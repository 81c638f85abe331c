// Engines for the callers that share one Model (Python threads, a server's requests). An Engine serves one
// caller at a time, so every call leases one: idle engines are reused, a new one is made while the
// engines' threads stay within the budget (at least two engines), and past that the caller waits for one
// to come back. So N concurrent callers run on a bounded number of engines and OS threads.
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "lstmlm/engine.hpp"

namespace lstmlm {

class EnginePool {
 public:
  // Makes the first engine at once, so a bad option (threads, precision) fails when the Model is made.
  // At most max(2, thread_budget / the engine's threads) engines exist.
  EnginePool(std::shared_ptr<const Model> model, EngineOptions options, int thread_budget);

  class Lease {
   public:
    Lease(EnginePool& pool, std::unique_ptr<Engine> engine) : pool_(&pool), engine_(std::move(engine)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Engine& operator*() const { return *engine_; }
    Engine* operator->() const { return engine_.get(); }

   private:
    EnginePool* pool_;
    std::unique_ptr<Engine> engine_;
  };

  // Blocks until an engine is free (a Python caller releases the GIL first).
  Lease acquire();
  const Engine& first() const { return *first_; }  // for what every engine shares (kernels, threads)
  int max_engines() const { return max_; }

 private:
  void give_back(std::unique_ptr<Engine> e);
  std::shared_ptr<const Model> model_;
  EngineOptions options_;
  int max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Engine>> idle_;
  int made_ = 0;
  const Engine* first_ = nullptr;
};

}  // namespace lstmlm
