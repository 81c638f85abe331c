#include "engine/team.hpp"

#include <thread>
#include <utility>

namespace lstmlm::engine {

namespace {

// Plain loads before blocking: about 65 us (1 ns a load, AMD EPYC), longer than the gaps between the
// tasks of a call (the leader's bookkeeping and serial work between split operations, the imbalance of
// the parts). At 4 us, a MEDIUM predict at batch 1 on 2 threads spent 6% of its samples in sched_yield
// and its kernel time, and ran 1.66x its 1-thread speed; at 65 us, 1.77x (4 alternating rounds). Then a
// bounded while of yields: on a machine with more runnable threads than cores, the thread being waited
// for may be queued behind the spinner on the same core, and a yield lets it run where more spinning
// would only burn its time slice.
constexpr int kSpins = 1 << 16;
constexpr int kYields = 64;

// Waits until ready() holds or the spin and yield budget is spent; returns ready().
template <class Ready>
bool spin_until(Ready&& ready) {
  for (int i = 0; i < kSpins; ++i)
    if (ready()) return true;
  for (int y = 0; y < kYields; ++y) {
    std::this_thread::yield();
    for (int i = 0; i < 64; ++i)
      if (ready()) return true;
  }
  return ready();
}

}  // namespace

Team::Team(int size) : size_(size), scratch_(static_cast<size_t>(size)), errors_(static_cast<size_t>(size)) {}

void Team::begin() { start_ = go_.load(std::memory_order_relaxed); }

void Team::publish() {
  done_.store(0, std::memory_order_relaxed);
  // seq_cst on both sides (here and in serve) so that either the member sees the new task or the leader
  // sees it blocking: no wake-up is lost, and no syscall is paid while every member still spins.
  go_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) go_.notify_all();
}

void Team::wait_done() {
  const int all = size_ - 1;
  if (spin_until([&] { return done_.load(std::memory_order_acquire) == all; })) return;
  leader_asleep_.store(true, std::memory_order_seq_cst);
  for (int d = done_.load(std::memory_order_seq_cst); d != all; d = done_.load(std::memory_order_seq_cst))
    done_.wait(d, std::memory_order_seq_cst);
  leader_asleep_.store(false, std::memory_order_relaxed);
}

void Team::dispatch() {
  if (size_ == 1) {
    call_(fn_, 0);
    return;
  }
  publish();
  std::exception_ptr mine;
  try {
    call_(fn_, 0);
  } catch (...) {
    mine = std::current_exception();
  }
  wait_done();
  // Every part has finished: a member's error is the caller's, and the team is ready for the next task.
  std::exception_ptr first = std::move(mine);
  for (auto& e : errors_) {
    if (e && !first) first = e;
    e = nullptr;
  }
  if (first) std::rethrow_exception(first);
}

void Team::end() {
  call_ = nullptr;
  if (size_ > 1) publish();
}

void Team::serve(int member) {
  uint32_t seen = start_;
  for (;;) {
    uint32_t g = seen;
    if (!spin_until([&] { return (g = go_.load(std::memory_order_acquire)) != seen; })) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      for (g = go_.load(std::memory_order_seq_cst); g == seen; g = go_.load(std::memory_order_seq_cst))
        go_.wait(seen, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = g;
    if (!call_) return;
    try {
      call_(fn_, member);
    } catch (...) {
      errors_[static_cast<size_t>(member)] = std::current_exception();
    }
    if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == size_ - 1 &&
        leader_asleep_.load(std::memory_order_seq_cst))
      done_.notify_one();
  }
}

}  // namespace lstmlm::engine
