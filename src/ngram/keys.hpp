// The 64-bit key of an n-gram in its order's table, built from its last word back: key(w), then
// extend(key(w), v) for (v w), and so on, so the keys of a word's longer and longer contexts cost one step
// each. Never 0 (the empty slot).
#pragma once
#include <cstdint>

namespace lstmlm::ngram {

inline uint64_t mix(uint64_t x) {  // splitmix64's finalizer: every input bit reaches every output bit
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x == 0 ? 1 : x;
}

inline uint64_t word_key(uint32_t word) { return mix(uint64_t{word} + 0x9e3779b97f4a7c15ULL); }

inline uint64_t extend_key(uint64_t key, uint32_t earlier_word) {
  return mix(key * 0x9e3779b97f4a7c15ULL + uint64_t{earlier_word} + 1);
}

}  // namespace lstmlm::ngram
