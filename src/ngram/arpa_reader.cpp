// Reading an ARPA file into an NgramModel: \data\ and its counts, one section per order, \end\; then the
// "blank" n-grams KenLM supplies (every suffix of an n-gram, so a lookup can stop at the first miss).
#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lstmlm/error.hpp"
#include "lstmlm/ngram.hpp"
#include "lstmlm/text.hpp"
#include "ngram/arpa_lines.hpp"
#include "ngram/keys.hpp"
#include "ngram/table.hpp"

namespace lstmlm {

namespace {

bool blank(std::string_view s) { return s.find_first_not_of(" \t") == std::string_view::npos; }

std::string_view trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// Splits on spaces and tabs (KenLM and SRILM write either), at most `max` fields (one more means too many).
size_t split_fields(std::string_view line, std::string_view* out, size_t max) {
  size_t n = 0, i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (n == max) return max + 1;
    out[n++] = line.substr(start, i - start);
  }
  return n;
}

}  // namespace

class ArpaReader {
 public:
  explicit ArpaReader(const std::string& path) : lines_(path), path_(path) {}

  std::shared_ptr<const NgramModel> read() {
    auto m = std::make_shared<NgramModel>();
    m->path_ = path_;
    read_data(*m);
    for (size_t n = 1; n <= m->counts_.size(); ++n) read_section(*m, n);
    std::string_view line;
    while (next(line) && blank(line)) {
    }
    if (eof_ || trim(line) != "\\end\\")
      fail(eof_ ? "no \\end\\ after the last section (the file is cut short?)"
                : "expected \\end\\ after the " + std::to_string(m->counts_.size()) + "-grams, got '" +
                      printable(line, 60) + "'");
    finish(*m);
    return m;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ModelError(path_, "line " + std::to_string(lines_.number()) + ": " + what);
  }

  bool next(std::string_view& line) {
    if (pending_) {
      pending_ = false;
      line = pending_line_;
      return true;
    }
    if (!lines_.next(line)) {
      eof_ = true;
      line = {};
      return false;
    }
    return true;
  }
  void push_back(std::string_view line) {
    pending_line_.assign(line);
    pending_ = true;
  }

  void read_data(NgramModel& m) {
    std::string_view line;
    while (next(line) && blank(line)) {
    }
    if (eof_ || trim(line) != "\\data\\")
      fail(eof_ ? "no \\data\\ header (not an ARPA file)"
                : "expected \\data\\, got '" + printable(line, 60) + "' (not an ARPA file)");
    while (next(line) && !blank(line)) {
      line = trim(line);
      if (line.starts_with("\\")) {
        push_back(line);
        break;
      }
      std::string_view f[3];
      const size_t eq = line.find('=');
      if (split_fields(line.substr(0, eq), f, 2) != 2 || f[0] != "ngram" || eq == std::string_view::npos)
        fail("expected 'ngram N=COUNT' in \\data\\, got '" + printable(line, 60) + "'");
      const uint64_t order = number<uint64_t>(trim(f[1]), "the order");
      const uint64_t count = number<uint64_t>(trim(line.substr(eq + 1)), "the count");
      if (order != m.counts_.size() + 1)
        fail("'ngram " + std::to_string(order) + "=' where 'ngram " + std::to_string(m.counts_.size() + 1) +
             "=' was expected (the orders are listed 1, 2, 3, ...)");
      if (order > static_cast<uint64_t>(kMaxNgramOrder))
        fail("order " + std::to_string(order) + ": at most " + std::to_string(kMaxNgramOrder));
      if (order == 1 && (count == 0 || count > std::numeric_limits<uint32_t>::max() - 1))
        fail("ngram 1=" + std::to_string(count) + ": a model has between 1 and 2^32 - 2 unigrams");
      m.counts_.push_back(count);
    }
    if (m.counts_.empty()) fail("\\data\\ lists no 'ngram N=COUNT' line");
  }

  template <class T>
  T number(std::string_view s, const char* what) const {
    T v{};
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size())
      fail(std::string(what) + " '" + printable(s, 40) + "' is not a number");
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(v)) fail(std::string(what) + " '" + printable(s, 40) + "' is not finite");
      // Kept as a float: a value past its range would become infinite.
      if (std::fabs(v) > double(std::numeric_limits<float>::max()))
        fail(std::string(what) + " '" + printable(s, 40) + "' is out of range");
    }
    return v;
  }

  void read_section(NgramModel& m, size_t n) {
    std::string_view line;
    while (next(line) && blank(line)) {
    }
    const std::string header = "\\" + std::to_string(n) + "-grams:";
    if (eof_ || trim(line) != header)
      fail(eof_ ? "no " + header + " section (\\data\\ lists " + std::to_string(m.counts_.size()) +
                      " orders; the file is cut short?)"
                : "expected " + header + ", got '" + printable(line, 60) + "'");
    const uint64_t declared = m.counts_[n - 1];
    // A count is only a claim until the lines are there: reserve no more than a modest start.
    const size_t start = static_cast<size_t>(std::min<uint64_t>(declared, uint64_t{1} << 20));
    if (n == 1) {
      m.unigrams_.reserve(start);
      m.words_.reserve(start);
      // <unk> is id 0 whether or not the file has it, and the others follow in the file's order: the ids
      // KenLM's query prints.
      m.words_.push_back("<unk>");
      m.unigrams_.push_back({0, kMissingUnkLog10, 0.0f});
      m.index_.emplace("<unk>", 0);
    } else {
      if (m.tables_.size() < n - 1) m.tables_.resize(n - 1);
      m.tables_[n - 2].reserve(start);
    }
    std::vector<uint32_t>* kept = n >= 3 ? &ids_[n] : nullptr;  // for the blanks of the lower orders
    if (kept) kept->reserve(start * n);
    uint64_t seen = 0;
    std::string_view f[kMaxNgramOrder + 2];
    uint32_t ids[kMaxNgramOrder];
    while (next(line) && !blank(line)) {
      if (trim(line).starts_with("\\")) {
        push_back(line);
        break;
      }
      if (++seen > declared)
        fail("more " + std::to_string(n) + "-grams than the " + std::to_string(declared) + " \\data\\ lists");
      const size_t got = split_fields(line, f, n + 2);
      if (got != n + 1 && got != n + 2)
        fail("an " + std::to_string(n) + "-gram line is 'LOG10PROB" +
             std::string(n == 1 ? " WORD" : " WORDS") + " [BACKOFF]' with " + std::to_string(n) + " word" +
             (n == 1 ? "" : "s") + ", got '" + printable(line, 60) + "'");
      ngram::Entry e;
      const double p = number<double>(f[0], "the log10 probability");
      if (p > 0) fail("the log10 probability " + std::string(f[0]) + " is positive (a probability above 1)");
      e.log10prob = static_cast<float>(p);
      // A back-off on the highest order is read and never used (nothing backs off to it), as KenLM does.
      if (got == n + 2) e.backoff = static_cast<float>(number<double>(f[n + 1], "the back-off"));
      if (n == 1 && f[1] == "<unk>") {
        if (unk_seen_) fail("the unigram '<unk>' appears twice");
        unk_seen_ = true;
        m.unigrams_[0] = e;
        continue;
      }
      if (n == 1) {
        const std::string word(f[1]);
        const auto id = static_cast<uint32_t>(m.words_.size());
        if (!m.index_.emplace(word, id).second)
          fail("the unigram '" + printable(word, 60) + "' appears twice");
        m.words_.push_back(word);
        m.unigrams_.push_back(e);
        continue;
      }
      for (size_t i = 0; i < n; ++i) {
        auto it = m.index_.find(f[1 + i]);
        if (it == m.index_.end())
          fail("'" + printable(f[1 + i], 60) + "' is not among the unigrams (an n-gram's words must be)");
        ids[i] = it->second;
      }
      uint64_t key = ngram::word_key(ids[n - 1]);
      for (size_t i = n - 1; i-- > 0;) key = ngram::extend_key(key, ids[i]);
      e.key = key;
      if (!m.tables_[n - 2].insert(e)) {
        std::string words(f[1]);
        for (size_t i = 2; i <= n; ++i) words += " " + std::string(f[i]);
        fail("the " + std::to_string(n) + "-gram '" + printable(words, 60) + "' appears twice");
      }
      if (kept) kept->insert(kept->end(), ids, ids + n);
    }
    if (seen != declared)
      fail("the " + header + " section has " + std::to_string(seen) + " n-grams, \\data\\ lists " +
           std::to_string(declared));
  }

  void finish(NgramModel& m) {
    auto need = [&](const char* w, uint32_t& id) {
      auto found = m.find(w);
      if (!found)
        throw ModelError(path_, std::string("no ") + w + " among the unigrams (an ARPA model has one)");
      id = *found;
    };
    need("<s>", m.bos_);
    need("</s>", m.eos_);
    m.unk_ = 0;
    m.unk_added_ = !unk_seen_;
    // The blanks: for k = 2 .. order - 1, each suffix of length k of a longer n-gram that the file leaves
    // out, with the probability the lower orders give it and no back-off (as KenLM supplies them).
    const size_t order = m.counts_.size();
    for (size_t k = 2; k + 1 <= order; ++k) {
      for (size_t n = k + 1; n <= order; ++n) {
        const std::vector<uint32_t>& all = ids_[n];
        for (size_t at = 0; at + n <= all.size(); at += n) {
          const uint32_t* g = all.data() + at;
          uint64_t key = ngram::word_key(g[n - 1]);
          NgramState context;
          for (size_t i = n - 1; i-- > n - k;) {
            key = ngram::extend_key(key, g[i]);
            context.words.push_back(g[i]);
          }
          if (m.tables_[k - 2].find(key)) continue;
          const double p = m.score(context, g[n - 1]).log10prob;
          m.tables_[k - 2].insert({key, static_cast<float>(p), 0.0f});
        }
      }
    }
    ids_.clear();
  }

  ngram::LineSource lines_;
  std::string path_;
  bool eof_ = false;
  bool unk_seen_ = false;
  bool pending_ = false;
  std::string pending_line_;
  std::map<size_t, std::vector<uint32_t>> ids_;  // order -> the word ids of its n-grams, n per n-gram
};

std::shared_ptr<const NgramModel> NgramModel::load(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw ModelError(path, "not a regular file (an ARPA model is a file)");
  return ArpaReader(path).read();
}

bool NgramModel::is_arpa(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  try {
    ngram::LineSource lines(path);
    std::string_view line;
    for (int i = 0; i < 1000 && lines.next(line); ++i)
      if (!blank(line)) return trim(line) == "\\data\\";
  } catch (const ModelError&) {
  }
  return false;
}

}  // namespace lstmlm
