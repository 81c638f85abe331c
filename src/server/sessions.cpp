#include "server/sessions.hpp"

#include <cstdio>
#include <random>

namespace lstmlm::server {

SessionStore::SessionStore(size_t max_sessions, std::chrono::seconds ttl, Metrics& metrics)
    : max_(max_sessions), ttl_(ttl), metrics_(metrics) {
  std::random_device rd;
  rng_state_[0] = (uint64_t{rd()} << 32) ^ rd();
  rng_state_[1] = (uint64_t{rd()} << 32) ^ rd() ^ 0x9E3779B97F4A7C15ull;
}

// 128 random bits as hex (xorshift128+ seeded from random_device): ids are not guessable from each other.
std::string SessionStore::new_id() {
  auto next = [&] {
    uint64_t s1 = rng_state_[0];
    const uint64_t s0 = rng_state_[1];
    rng_state_[0] = s0;
    s1 ^= s1 << 23;
    rng_state_[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return rng_state_[1] + s0;
  };
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(next()),
                static_cast<unsigned long long>(next()));
  return buf;
}

void SessionStore::expire_locked(Clock::time_point now) {
  while (!lru_.empty()) {
    auto it = map_.find(lru_.back());
    if (now - it->second.used < ttl_) break;
    map_.erase(it);
    lru_.pop_back();
    metrics_.session_evicted();
  }
}

std::shared_ptr<Session> SessionStore::add(std::unique_ptr<Session> s) {
  const std::lock_guard lock(mu_);
  const auto now = Clock::now();
  expire_locked(now);
  while (!lru_.empty() && map_.size() >= max_) {
    map_.erase(lru_.back());
    lru_.pop_back();
    metrics_.session_evicted();
  }
  std::string id = new_id();
  while (map_.count(id)) id = new_id();
  s->id = id;
  std::shared_ptr<Session> shared(std::move(s));
  lru_.push_front(id);
  map_[id] = Entry{shared, now, lru_.begin()};
  return shared;
}

std::shared_ptr<Session> SessionStore::find(const std::string& id) {
  const std::lock_guard lock(mu_);
  const auto now = Clock::now();
  expire_locked(now);
  auto it = map_.find(id);
  if (it == map_.end()) return nullptr;
  it->second.used = now;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.session;
}

bool SessionStore::remove(const std::string& id) {
  const std::lock_guard lock(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) return false;
  lru_.erase(it->second.lru);
  map_.erase(it);
  return true;
}

size_t SessionStore::size() {
  const std::lock_guard lock(mu_);
  return map_.size();
}

void SessionStore::sweep() {
  const std::lock_guard lock(mu_);
  expire_locked(Clock::now());
}

}  // namespace lstmlm::server
