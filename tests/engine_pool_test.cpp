// EnginePool: the engines concurrent callers lease. Bounded by the thread budget (at least two engines),
// an engine given back is the one leased next, and a caller past the bound waits until one comes back.
#include "lstmlm/engine_pool.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <optional>

#include "lstmlm/error.hpp"

namespace {

using lstmlm::Engine;
using lstmlm::EngineOptions;
using lstmlm::EnginePool;
using lstmlm::Model;

EngineOptions one_thread() {
  EngineOptions o;
  o.threads = 1;
  return o;
}

TEST(EnginePool, TheThreadBudgetBoundsTheEngines) {
  auto m = Model::random(20, 4, 8, 1, 1);
  EXPECT_EQ(EnginePool(m, one_thread(), 6).max_engines(), 6);
  EXPECT_EQ(EnginePool(m, one_thread(), 1).max_engines(), 2);  // never fewer than two
  EngineOptions two = one_thread();
  two.threads = 2;
  EXPECT_EQ(EnginePool(m, two, 6).max_engines(), 3);
}

TEST(EnginePool, AnEngineGivenBackIsLeasedAgain) {
  EnginePool pool(Model::random(20, 4, 8, 1, 1), one_thread(), 2);
  const Engine* first = nullptr;
  {
    auto lease = pool.acquire();
    first = &*lease;
    EXPECT_EQ(first, &pool.first());  // the engine made with the pool
  }
  auto again = pool.acquire();
  EXPECT_EQ(&*again, first);
}

TEST(EnginePool, ACallerPastTheBoundWaitsForAnEngine) {
  EnginePool pool(Model::random(20, 4, 8, 1, 1), one_thread(), 2);
  std::optional<EnginePool::Lease> a(pool.acquire()), b(pool.acquire());
  EXPECT_NE(&**a, &**b);
  auto third = std::async(std::launch::async, [&] { return &*pool.acquire(); });
  // Had acquire not waited, the third lease would be back at once; it cannot finish while both are out.
  EXPECT_EQ(third.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  const Engine* freed = &**a;
  a.reset();
  ASSERT_EQ(third.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(third.get(), freed);
}

TEST(EnginePool, ABadOptionFailsWhenThePoolIsMade) {
  EngineOptions o = one_thread();
  o.threads = 1 << 20;
  EXPECT_THROW(EnginePool(Model::random(20, 4, 8, 1, 1), o, 2), lstmlm::UsageError);
}

}  // namespace
