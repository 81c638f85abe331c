// A team of threads that splits one operation at a time: the leader (thread 0, which runs the forward
// pass) publishes a task, every member runs its part of it and the leader returns when all parts are
// done. Used when a batch leaves threads idle: at batch 1 a step of a large model is bound by streaming
// its weights, and each core can stream half. The tasks come a few microseconds apart, so a condition
// variable (a syscall and a wake-up per task) would cost more than the split saves: members and leader
// spin on plain loads for a bounded while, then block on a futex (std::atomic::wait). No `pause` in the
// spin: it costs about 140 cycles on recent Intel cores.
//
// A session: begin() on the leader, then serve(i) on members 1..size()-1 while the leader calls run()
// any number of times and finally end() (serve returns once end() is seen). Not reentrant.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <type_traits>
#include <vector>

#include "engine/thread_pool.hpp"
#include "kernels/backend.hpp"

namespace lstmlm::engine {

class Team {
 public:
  explicit Team(int size);
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  int size() const { return size_; }
  // Scratch of part i: only the thread running part i touches it.
  kernels::Scratch& scratch(int part) { return scratch_[static_cast<size_t>(part)]; }

  void begin();
  // Calls f(part) for every part in [0, size()), part 0 on the calling thread (the leader), and returns
  // when all have returned. The first exception thrown by a part is rethrown here, after all are done.
  template <class F>
  void run(F&& f) {
    call_ = [](void* fn, int part) { (*static_cast<std::remove_reference_t<F>*>(fn))(part); };
    fn_ = &f;
    dispatch();
  }
  void end();
  void serve(int member);

 private:
  void dispatch();
  void publish();
  void wait_done();

  int size_;
  std::vector<kernels::Scratch> scratch_;
  std::vector<std::exception_ptr> errors_;  // errors_[i]: member i's, read by the leader after done_
  void (*call_)(void*, int) = nullptr;      // null: the session has ended
  void* fn_ = nullptr;
  uint32_t start_ = 0;            // go_ at begin(): where the members of a session count from
  std::atomic<uint32_t> go_{0};   // +1 per published task (release: call_, fn_ and done_ = 0 with it)
  std::atomic<int> done_{0};      // members finished with the current task
  std::atomic<int> sleepers_{0};  // members blocked (or about to block) on go_
  std::atomic<bool> leader_asleep_{false};
};

// One session on `pool`: body() on thread 0 as the leader (it calls team.run any number of times), the
// other threads serving. However body ends, end() releases the members, or pool.run would wait for them
// forever; an exception from body reaches the caller.
template <class Body>
void run_session(ThreadPool& pool, Team& team, Body&& body) {
  team.begin();
  pool.run([&](int t) {
    if (t > 0) {
      team.serve(t);
      return;
    }
    struct End {
      Team& team;
      ~End() { team.end(); }
    } end{team};
    body();
  });
}

}  // namespace lstmlm::engine
