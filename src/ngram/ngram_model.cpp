// The tables of an n-gram model and its queries (lstmlm/ngram.hpp); the ARPA reader is arpa_reader.cpp.
#include <algorithm>
#include <bit>

#include "lstmlm/ngram.hpp"
#include "ngram/keys.hpp"
#include "ngram/table.hpp"

namespace lstmlm {

using ngram::Entry;
using ngram::extend_key;
using ngram::word_key;

NgramModel::NgramModel() = default;
NgramModel::~NgramModel() = default;

std::optional<uint32_t> NgramModel::find(std::string_view word) const {
  auto it = index_.find(word);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

size_t NgramModel::memory_bytes() const {
  size_t b = unigrams_.size() * sizeof(Entry);
  for (const auto& t : tables_) b += t.bytes();
  for (const auto& w : words_) b += sizeof(std::string) + (w.size() > 15 ? w.capacity() : 0);
  // The word index: a node (key, value, next pointer, cached hash) and a bucket pointer per word.
  b += index_.size() * (sizeof(std::string) + 4 * sizeof(void*)) + index_.bucket_count() * sizeof(void*);
  return b;
}

NgramScore NgramModel::score(const NgramState& in, uint32_t word) const {
  const auto& h = in.words;
  const size_t k = std::min(h.size(), tables_.size());
  double p = unigrams_[word].log10prob;
  int length = 1;
  // The longest n-gram (h[j-1] .. h[0] word) present. Every suffix of a present n-gram is present (the
  // blanks see to it), so the first one missing ends the search.
  uint64_t key = word_key(word);
  for (size_t j = 0; j < k; ++j) {
    key = extend_key(key, h[j]);
    const Entry* e = tables_[j].find(key);
    if (!e) break;
    p = e->log10prob;
    length = static_cast<int>(j) + 2;
  }
  // The back-offs of the contexts longer than the one used: (h[i-1] .. h[0]) for i = length .. k.
  uint64_t ckey = 0;
  for (size_t i = 1; i <= k; ++i) {
    ckey = i == 1 ? word_key(h[0]) : extend_key(ckey, h[i - 1]);
    if (static_cast<int>(i) < length) continue;
    if (i == 1) {
      p += unigrams_[h[0]].backoff;
      continue;
    }
    const Entry* e = tables_[i - 2].find(ckey);
    if (!e) break;  // nor any longer context (a context's suffixes are present too)
    p += e->backoff;
  }
  return {p, length};
}

NgramScore NgramModel::score(const NgramState& in, uint32_t word, NgramState& out) const {
  const NgramScore s = score(in, word);
  const size_t keep = tables_.size();  // order - 1 words of context
  if (keep == 0) {
    out.words.clear();
    return s;
  }
  if (&out != &in) out.words.assign(in.words.begin(), in.words.begin() + std::min(in.words.size(), keep));
  if (out.words.size() >= keep) out.words.resize(keep - 1);
  out.words.insert(out.words.begin(), word);
  return s;
}

}  // namespace lstmlm
