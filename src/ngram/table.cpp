#include "ngram/table.hpp"

#include <algorithm>
#include <bit>

namespace lstmlm::ngram {

void Table::reserve(size_t n) {
  // At most 3/4 full, and 1.5 slots per entry when the count is known (KenLM's probing default): a lookup
  // that misses (the common case past the longest match) stays a few probes long.
  const size_t want = std::bit_ceil(std::max<size_t>(16, n + n / 2));
  if (want <= slots_.size()) return;
  std::vector<Entry> old(want);
  old.swap(slots_);
  size_ = 0;
  for (const Entry& e : old)
    if (e.key != 0) insert(e);
}

const Entry* Table::find(uint64_t key) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = key & mask;; i = (i + 1) & mask) {
    const Entry& e = slots_[i];
    if (e.key == key) return &e;
    if (e.key == 0) return nullptr;
  }
}

bool Table::insert(const Entry& e) {
  if ((size_ + 1) * 4 > slots_.size() * 3) reserve((size_ + 1) * 2);
  const size_t mask = slots_.size() - 1;
  for (size_t i = e.key & mask;; i = (i + 1) & mask) {
    Entry& s = slots_[i];
    if (s.key == e.key) return false;
    if (s.key == 0) {
      s = e;
      ++size_;
      return true;
    }
  }
}

}  // namespace lstmlm::ngram
