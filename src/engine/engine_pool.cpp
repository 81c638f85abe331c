#include "lstmlm/engine_pool.hpp"

#include <algorithm>

namespace lstmlm {

EnginePool::EnginePool(std::shared_ptr<const Model> model, EngineOptions options, int thread_budget)
    : model_(std::move(model)), options_(std::move(options)) {
  idle_.push_back(std::make_unique<Engine>(model_, options_));
  first_ = idle_.back().get();
  made_ = 1;
  max_ = std::max(2, thread_budget / std::max(1, first_->threads()));
}

EnginePool::Lease EnginePool::acquire() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !idle_.empty() || made_ < max_; });
  if (!idle_.empty()) {
    auto e = std::move(idle_.back());
    idle_.pop_back();
    return Lease(*this, std::move(e));
  }
  ++made_;
  lock.unlock();
  try {
    return Lease(*this, std::make_unique<Engine>(model_, options_));
  } catch (...) {
    lock.lock();
    --made_;
    cv_.notify_one();
    throw;
  }
}

void EnginePool::give_back(std::unique_ptr<Engine> e) {
  {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(e));
  }
  cv_.notify_one();
}

EnginePool::Lease::~Lease() {
  if (engine_) pool_->give_back(std::move(engine_));
}

}  // namespace lstmlm
