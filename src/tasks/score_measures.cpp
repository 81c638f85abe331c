#include "tasks/score_measures.hpp"

#include <optional>
#include <utility>
#include <vector>

#include "model/unicode.hpp"

namespace lstmlm::tasks::detail {

namespace {

// All Python whitespace (what str.split() splits on), as the word tokenizer sees it.
bool is_space(const std::string& token) {
  size_t bad = 0;
  auto cps = model::decode_utf8(token, &bad);
  if (!cps || cps->empty()) return false;
  for (char32_t c : *cps)
    if (!model::is_python_space(c)) return false;
  return true;
}

// One word being summed: its characters' log-probs in double, whether every part was scored.
struct Word {
  WordScore w;
  double logprob = 0;
  int parts = 0;
  bool all_scored = true, has_text = false, trailing = false;
  std::string spaces;  // the whitespace of a record without text

  void add(const WordScore& c) {
    ++parts;
    w.oov = w.oov || c.oov;
    if (c.scored)
      logprob += c.logprob;
    else
      all_scored = false;
  }
  // The line's eos goes to its last word; a line without a word has the eos as its record.
  void add_eos(const WordScore& c) {
    if (!has_text) {
      w.token = c.token;
      w.eos = true;
      w.entropy = c.entropy;
    }
    add(c);
  }
  WordScore done() {
    w.id = -1;
    w.scored = all_scored && parts > 0;
    w.logprob = w.scored ? static_cast<float>(logprob) : 0.0f;
    if (!w.scored) w.entropy = 0.0f, w.rank = 0;
    if (!has_text && !w.eos) w.token = spaces;
    return std::move(w);
  }
};

}  // namespace

void aggregate_words(LineScore& l) {
  std::vector<WordScore> out;
  Word cur;
  for (const auto& c : l.words) {
    if (c.eos) {
      cur.add_eos(c);
    } else if (is_space(c.token)) {
      if (cur.has_text) cur.trailing = true;
      cur.spaces += c.token;
      cur.add(c);
    } else {
      if (cur.trailing) {
        out.push_back(cur.done());
        cur = Word{};
      }
      if (!cur.has_text) cur.w.entropy = c.entropy;  // the entropy before the word's first character
      cur.has_text = true;
      cur.w.token += c.token;
      cur.add(c);
    }
  }
  if (cur.parts > 0) out.push_back(cur.done());
  l.words = std::move(out);
}

void aggregate_pieces(LineScore& l, const Tokenizer& tok) {
  std::vector<WordScore> out;
  Word cur;
  std::optional<std::string> prev;
  for (const auto& c : l.words) {
    if (c.eos) {
      cur.add_eos(c);
      continue;
    }
    std::string text = tok.join_text(prev, c.token);
    const bool starts = !prev || text.starts_with(' ');
    if (text.starts_with(' ')) text.erase(0, 1);
    if (starts && cur.has_text) {
      out.push_back(cur.done());
      cur = Word{};
    }
    if (!cur.has_text) cur.w.entropy = c.entropy;  // the entropy before the word's first piece
    cur.has_text = true;
    cur.w.token += text;
    cur.add(c);
    prev = c.token;
  }
  if (cur.parts > 0) out.push_back(cur.done());
  l.words = std::move(out);
}

}  // namespace lstmlm::tasks::detail
