// One order's n-grams of an NgramModel: an open-addressing table keyed by a 64-bit hash of the n-gram's words
// (ngram/keys.hpp), read from the last word back so the keys of (w), (v w), (u v w) follow each other, as
// KenLM's probing model does.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lstmlm::ngram {

struct Entry {
  uint64_t key = 0;  // 0: an empty slot
  float log10prob = 0;
  float backoff = 0;
};

class Table {
 public:
  const Entry* find(uint64_t key) const;
  // Inserts a new key; false when it is already there.
  bool insert(const Entry& e);
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.size() * sizeof(Entry); }
  void reserve(size_t n);

 private:
  std::vector<Entry> slots_;
  size_t size_ = 0;
};

}  // namespace lstmlm::ngram
