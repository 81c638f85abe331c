#include "server/metrics.hpp"

#include <cstdio>

#include "lstmlm/text.hpp"

namespace lstmlm::server {

namespace {

std::string num(double v) { return format_g9(v); }

template <class Bounds>
void observe(std::array<uint64_t, 13>& counts, const Bounds& bounds, double v) {
  size_t i = 0;
  while (i < bounds.size() && v > static_cast<double>(bounds[i])) ++i;
  ++counts[i];
}

template <class Bounds>
void histogram(std::string& out, const std::string& name, const std::string& labels, const Bounds& bounds,
               const std::array<uint64_t, 13>& counts, double sum, uint64_t n) {
  uint64_t cumulative = 0;
  const std::string sep = labels.empty() ? "" : ",";
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += counts[i];
    out += name + "_bucket{" + labels + sep + "le=\"" + num(static_cast<double>(bounds[i])) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{" + labels + sep + "le=\"+Inf\"} " + std::to_string(n) + "\n";
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + num(sum) + "\n";
  out += name + "_count" + braces + " " + std::to_string(n) + "\n";
}

}  // namespace

void Metrics::request(const std::string& endpoint, int status, double seconds) {
  const std::lock_guard lock(mu_);
  ++requests_[{endpoint, status}];
  Histogram& h = latency_[endpoint];
  observe(h.counts, kLatency, seconds);
  h.sum += seconds;
  ++h.n;
}

void Metrics::count(const std::string& endpoint, int status) {
  const std::lock_guard lock(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::batch(int rows) {
  const std::lock_guard lock(mu_);
  observe(batch_.counts, kBatch, rows);
  batch_.sum += rows;
  ++batch_.n;
}

std::string Metrics::text(int64_t queue_depth, int64_t sessions_live) const {
  const std::lock_guard lock(mu_);
  std::string out;
  out += "# HELP lstmlm_requests_total HTTP requests answered, by endpoint and status.\n";
  out += "# TYPE lstmlm_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    out += "lstmlm_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
           "\"} " + std::to_string(n) + "\n";
  out += "# HELP lstmlm_request_seconds Time from a request's arrival to its response, by endpoint.\n";
  out += "# TYPE lstmlm_request_seconds histogram\n";
  for (const auto& [endpoint, h] : latency_)
    histogram(out, "lstmlm_request_seconds", "endpoint=\"" + endpoint + "\"", kLatency, h.counts, h.sum, h.n);
  out += "# HELP lstmlm_batch_rows Rows in each engine call of the scheduler.\n";
  out += "# TYPE lstmlm_batch_rows histogram\n";
  histogram(out, "lstmlm_batch_rows", "", kBatch, batch_.counts, batch_.sum, batch_.n);
  out += "# HELP lstmlm_tokens_scored_total Tokens whose probability was computed (score, sessions).\n";
  out += "# TYPE lstmlm_tokens_scored_total counter\n";
  out += "lstmlm_tokens_scored_total " + std::to_string(scored_.load()) + "\n";
  out += "# HELP lstmlm_tokens_generated_total Tokens generated.\n";
  out += "# TYPE lstmlm_tokens_generated_total counter\n";
  out += "lstmlm_tokens_generated_total " + std::to_string(generated_.load()) + "\n";
  out += "# HELP lstmlm_queue_depth Requests waiting for the scheduler.\n";
  out += "# TYPE lstmlm_queue_depth gauge\n";
  out += "lstmlm_queue_depth " + std::to_string(queue_depth) + "\n";
  out += "# HELP lstmlm_sessions_live Sessions held.\n";
  out += "# TYPE lstmlm_sessions_live gauge\n";
  out += "lstmlm_sessions_live " + std::to_string(sessions_live) + "\n";
  out += "# HELP lstmlm_sessions_evicted_total Sessions removed for --max-sessions or their idle TTL.\n";
  out += "# TYPE lstmlm_sessions_evicted_total counter\n";
  out += "lstmlm_sessions_evicted_total " + std::to_string(evicted_.load()) + "\n";
  return out;
}

}  // namespace lstmlm::server
