// The server's scheduler: request threads take turns leading batches; every answer is the lone answer's
// bits whatever shared its batch, a bad request fails alone, a full queue is refused, and nothing is lost.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "server/batcher.hpp"
#include "server/http_error.hpp"
#include "server/metrics.hpp"
#include "server/sessions.hpp"

namespace {

using lstmlm::Engine;
using lstmlm::EngineOptions;
using lstmlm::Model;
using lstmlm::State;
using lstmlm::server::Batcher;
using lstmlm::server::Metrics;
using lstmlm::server::Session;

constexpr int kThreads = 12;  // request threads; each sends kRounds predictions and session steps
constexpr int kRounds = 20;

std::string context_of(int thread, int round) {
  std::string c;
  for (int k = 0; k <= (thread + round) % 5; ++k)
    c += "t" + std::to_string((thread * 7 + round * 3 + k) % 40) + " ";
  return c;
}

// "lstmlm_batch_rows_sum S" and "_count N" of the metrics text.
double metric(const std::string& text, const std::string& name) {
  const auto at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size() + 2));
}

TEST(ServerBatcher, ConcurrentRequestsGetTheLoneAnswersInSharedBatches) {
  auto model = Model::random(40, 8, 16, 2, 7);
  lstmlm::tasks::PredictOptions opt;
  opt.top = 5;
  // The lone answers, from an engine of their own: one context per call, one session step per call.
  Engine lone(model, EngineOptions{});
  std::vector<std::vector<std::string>> want(kThreads);
  std::vector<std::vector<std::vector<float>>> want_steps(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int r = 0; r < kRounds; ++r) {
      auto p = lstmlm::tasks::predict(lone, {context_of(t, r)}, opt, "context", 1);
      std::string s;
      for (const auto& c : p[0].top) s += std::to_string(c.id) + ":" + std::to_string(c.logprob) + " ";
      want[size_t(t)].push_back(s);
    }
  for (int t = 0; t < kThreads; ++t) {
    State st = State::zeros(*model);
    for (int r = 0; r < kRounds; ++r) {
      std::vector<float> lp;
      State next;
      lone.step(st, int32_t((t + r * 5) % 40), next, lp);
      want_steps[size_t(t)].push_back(lp);
      st = std::move(next);
    }
  }
  Metrics metrics;
  std::atomic<int> wrong{0};
  {
    // --batch-wait-us 2000: a leader waits for more rows, so batches of several requests certainly form.
    Batcher batcher(model, EngineOptions{.threads = 2}, 4, 2000, 1000, metrics);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        Session s;
        s.state = State::zeros(*model);
        for (int r = 0; r < kRounds; ++r) {
          auto p = batcher.predict({context_of(t, r)}, opt);
          std::string got;
          for (const auto& c : p[0].top) got += std::to_string(c.id) + ":" + std::to_string(c.logprob) + " ";
          if (got != want[size_t(t)][size_t(r)]) ++wrong;
          std::vector<float> lp;
          batcher.advance(s, {int32_t((t + r * 5) % 40)}, lp);
          if (s.next != want_steps[size_t(t)][size_t(r)]) ++wrong;
        }
      });
    for (auto& th : threads) th.join();
  }
  EXPECT_EQ(wrong.load(), 0);
  const std::string text = metrics.text(0, 0);
  const double calls = metric(text, "lstmlm_batch_rows_count"), rows = metric(text, "lstmlm_batch_rows_sum");
  EXPECT_EQ(rows, 2.0 * kThreads * kRounds);  // every row ran once
  EXPECT_LT(calls, rows) << "no batch held more than one request";
}

TEST(ServerBatcher, ABadContextFailsOnlyItsOwnRequest) {
  auto model = Model::random(40, 8, 16, 1, 3);
  Metrics metrics;
  Batcher batcher(model, EngineOptions{}, 8, 5000, 100, metrics);
  lstmlm::tasks::PredictOptions opt;
  opt.top = 3;
  opt.oov = lstmlm::tasks::OovPolicy::Error;  // an unknown word is an InputError
  std::atomic<int> ok{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      try {
        batcher.predict({t == 2 ? "t1 nosuchword" : "t1 t2"}, opt);
        ++ok;
      } catch (const lstmlm::InputError& e) {
        if (std::string(e.what()).find("nosuchword") != std::string::npos) ++refused;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 5);
  EXPECT_EQ(refused.load(), 1);
}

TEST(ServerBatcher, AFullQueueIsRefusedAndTheQueuedRequestsStillAnswered) {
  auto model = Model::random(40, 8, 16, 1, 3);
  Metrics metrics;
  lstmlm::tasks::PredictOptions opt;
  std::atomic<int> ok{0}, busy{0};
  {
    // The first request leads and waits 300 ms for more rows; one more fits the queue, the rest are 503.
    Batcher batcher(model, EngineOptions{}, 64, 300000, 2, metrics);
    std::vector<std::thread> threads;
    for (int t = 0; t < 5; ++t) {
      threads.emplace_back([&] {
        try {
          batcher.predict({"t1"}, opt);
          ++ok;
        } catch (const lstmlm::server::HttpError& e) {
          if (e.status() == 503) ++busy;
        }
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // all arrive within the first's wait
    }
    for (auto& th : threads) th.join();
  }
  EXPECT_EQ(ok.load(), 2);
  EXPECT_EQ(busy.load(), 3);
}

}  // namespace
