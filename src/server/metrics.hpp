// What /metrics reports, in Prometheus' text exposition format (version 0.0.4): requests by endpoint and
// status, tokens scored and generated, latency and batch-size histograms, queue depth, sessions.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace lstmlm::server {

class Metrics {
 public:
  void request(const std::string& endpoint, int status, double seconds);
  void count(const std::string& endpoint, int status);  // a request without a latency (401, 404, /health)
  void batch(int rows);
  void tokens_scored(int64_t n) { scored_ += n; }
  void tokens_generated(int64_t n) { generated_ += n; }
  void session_evicted() { ++evicted_; }
  // The text of /metrics; the gauges are read by the caller at that moment.
  std::string text(int64_t queue_depth, int64_t sessions_live) const;

 private:
  static constexpr std::array<double, 12> kLatency{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                   0.05,   0.1,   0.25,   0.5,   1.0,  5.0};
  static constexpr std::array<int, 9> kBatch{1, 2, 4, 8, 16, 32, 64, 128, 256};
  struct Histogram {
    std::array<uint64_t, 13> counts{};  // one per bound, then +Inf
    double sum = 0;
    uint64_t n = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_;
  Histogram batch_;
  std::atomic<int64_t> scored_{0}, generated_{0}, evicted_{0};
};

}  // namespace lstmlm::server
