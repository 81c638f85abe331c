// Sessions: a caller's own stream (a keyboard's text so far, a decoder's hypothesis) kept between
// requests. Each holds the model's state after everything fed and the log-probs of the next token; at most
// --max-sessions live, the least recently used evicted past that, and any idle past the TTL removed. A
// session costs the state (per layer h and c floats) plus 4 x vocab_size bytes (docs/serving.md).
#pragma once
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/cache.hpp"
#include "lstmlm/tasks/stream.hpp"
#include "server/metrics.hpp"

namespace lstmlm::server {

using Clock = std::chrono::steady_clock;

// A stream of the library (lstmlm/tasks/stream.hpp): `next` is empty while the session has no context (no
// start token, nothing fed): its first token is then context only, as a line's first token is without a
// start token.
struct Session : tasks::Stream {
  std::string id;
  std::mutex mu;                // one request at a time advances a session
  std::vector<int32_t> recent;  // the last tokens fed, as many as the longest boosted phrase needs
  // The continuous cache pointer over the session's own tokens (tasks/cache.hpp): its words' scores and its
  // candidates are the cache's. Not part of the exported state.
  std::optional<tasks::NeuralCache> cache;
};

class SessionStore {
 public:
  SessionStore(size_t max_sessions, std::chrono::seconds ttl, Metrics& metrics);
  // A new session holding `s` (its id set here); evicts the least recently used one when full.
  std::shared_ptr<Session> add(std::unique_ptr<Session> s);
  // The live session of that id (now its most recent use), or nullptr.
  std::shared_ptr<Session> find(const std::string& id);
  bool remove(const std::string& id);
  size_t size();
  // Removes the sessions idle past the TTL.
  void sweep();

 private:
  struct Entry {
    std::shared_ptr<Session> session;
    Clock::time_point used;
    std::list<std::string>::iterator lru;
  };
  void expire_locked(Clock::time_point now);
  std::string new_id();
  size_t max_;
  std::chrono::seconds ttl_;
  Metrics& metrics_;
  std::mutex mu_;
  std::list<std::string> lru_;  // most recent first
  std::unordered_map<std::string, Entry> map_;
  uint64_t rng_state_[2];
};

}  // namespace lstmlm::server
