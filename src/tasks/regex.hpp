// The regular expressions of --regex (tasks/constraint.hpp has the syntax): parsed once into a Thompson NFA
// over bytes, whose DFA states are made lazily, as the text reaches them.
#pragma once
#include <array>
#include <bitset>
#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

namespace lstmlm::tasks::detail {

// Automaton states at most: each holds a 1 KiB transition row, so this bounds a pattern's memory to 32 MiB.
inline constexpr size_t kMaxDfaStates = 32768;
// NFA states at most (the expanded {m,n} repetitions).
inline constexpr size_t kMaxNfaStates = 200000;

class Dfa {
 public:
  // Throws UsageError naming "regex" (with the offset) when the pattern is outside the subset.
  explicit Dfa(std::string_view pattern);
  int32_t start() const { return 0; }
  // The state after byte `c` from `s`; -1 when no text continuing this way can match. Not thread-safe (it
  // may add a state): the caller serializes.
  int32_t step(int32_t s, unsigned char c);
  bool accepting(int32_t s) const { return accepting_[static_cast<size_t>(s)]; }
  size_t size() const { return sets_.size(); }
  // Whole-text match (tests).
  bool matches(std::string_view text);

 private:
  struct NState {
    enum Kind : uint8_t { Byte, Split, Match } kind;
    int32_t out = -1, out2 = -1;
    int32_t set = -1;  // index into sets of bytes, for Byte
  };
  int32_t add_state(std::vector<int32_t> set);
  void closure(int32_t s, std::vector<int32_t>& out);
  friend class RegexCompiler;
  std::vector<NState> nfa_;
  std::vector<std::bitset<256>> bytes_;
  int32_t nfa_start_ = -1;
  // DFA: each state's NFA set (sorted Byte and Match states), transitions (-2: not made yet) and acceptance.
  std::vector<std::vector<int32_t>> sets_;
  std::vector<std::array<int32_t, 256>> trans_;
  std::vector<bool> accepting_;
  std::map<std::vector<int32_t>, int32_t> index_;
  std::vector<uint32_t> mark_;
  uint32_t generation_ = 0;
};

}  // namespace lstmlm::tasks::detail
