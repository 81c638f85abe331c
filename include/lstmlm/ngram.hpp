// A back-off n-gram language model read from an ARPA file (plain or gzip), queried live with KenLM's and
// SRILM's semantics (docs/mixing.md): the longest n-gram present gives the probability, the back-offs of the
// longer contexts are added; <s> is context only; a word not in the unigrams is <unk>; "blank" n-grams
// (a suffix of a longer n-gram that the file leaves out) are supplied as KenLM does, so the n-gram length a
// score reports is KenLM's. Immutable once loaded and shared by threads; the caller owns each NgramState.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lstmlm {

namespace ngram {
struct Entry;
class Table;
}  // namespace ngram

inline constexpr int kMaxNgramOrder = 32;
// The log10 probability KenLM gives <unk> when the file has none.
inline constexpr float kMissingUnkLog10 = -100.0f;

// The words before the next one, the most recent first (at most order - 1 of them).
struct NgramState {
  std::vector<uint32_t> words;
};

struct NgramScore {
  double log10prob = 0;
  int length = 0;  // the n-gram that gave the probability: 1 = the unigram
};

class NgramModel {
 public:
  // Reads an ARPA file (gzip or plain, by its content). Throws ModelError "<path>: line N: <what>" for a
  // file that is not a well-formed ARPA model: counts that disagree with \data\, a missing or repeated
  // section, a field that is not a finite number, a positive log10 probability, a repeated n-gram, a word
  // of a higher order that is no unigram, no <s> or </s>, an order past kMaxNgramOrder.
  static std::shared_ptr<const NgramModel> load(const std::string& path);
  // Whether `path` is a regular file whose first line that is not blank is "\data\" (after gzip's
  // decompression when it is compressed): what `-m` takes for an ARPA model rather than a model directory.
  static bool is_arpa(const std::string& path);

  int order() const { return static_cast<int>(counts_.size()); }
  // The n-grams of each order as \data\ counts them (the blanks supplied are not counted).
  const std::vector<uint64_t>& counts() const { return counts_; }
  uint32_t vocab_size() const { return static_cast<uint32_t>(words_.size()); }
  const std::string& word(uint32_t id) const { return words_.at(id); }
  std::optional<uint32_t> find(std::string_view word) const;
  // The id of `word`, <unk>'s when it is not a unigram.
  uint32_t index(std::string_view word) const { return find(word).value_or(unk_); }
  uint32_t unk() const { return unk_; }
  uint32_t bos() const { return bos_; }
  uint32_t eos() const { return eos_; }
  // True when the file has no <unk>: it was added with log10 p = kMissingUnkLog10, as KenLM does.
  bool unk_added() const { return unk_added_; }
  const std::string& path() const { return path_; }
  // Bytes the model holds (tables and vocabulary).
  size_t memory_bytes() const;

  NgramState begin_sentence() const { return NgramState{{bos_}}; }
  NgramState null_context() const { return {}; }
  // log10 p(word | in) and the length of the n-gram it used; `out` is the state after it (may be `in`).
  NgramScore score(const NgramState& in, uint32_t word, NgramState& out) const;
  // log10 p(word | in) alone.
  NgramScore score(const NgramState& in, uint32_t word) const;

  NgramModel();  // load() builds one
  ~NgramModel();
  NgramModel(const NgramModel&) = delete;
  NgramModel& operator=(const NgramModel&) = delete;

 private:
  friend class ArpaReader;
  std::string path_;
  std::vector<uint64_t> counts_;
  std::vector<std::string> words_;
  std::vector<ngram::Entry> unigrams_;  // by id (key unused)
  std::vector<ngram::Table> tables_;    // tables_[n - 2]: the n-grams of order n >= 2 (src/ngram/table.hpp)
  struct WordHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, WordHash, std::equal_to<>> index_;
  uint32_t unk_ = 0, bos_ = 0, eos_ = 0;
  bool unk_added_ = false;
};

}  // namespace lstmlm
