#include "lstmlm/tasks/ngram_score.hpp"

#include <cmath>

#include "lstmlm/error.hpp"
#include "lstmlm/normalize.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/text.hpp"
#include "lstmlm/tokenizer.hpp"
#include "lstmlm/units.hpp"

namespace lstmlm::tasks {

std::vector<std::string> ngram_words(std::string_view line) {
  std::vector<std::string> out;
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n';
  };
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && space(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !space(line[i])) ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

NgramScorer::NgramScorer(std::shared_ptr<const NgramModel> model, ScoreOptions opt)
    : model_(std::move(model)), opt_(std::move(opt)) {
  opt_.validate();
  auto refuse = [](const char* key, const char* why) {
    throw UsageError::option(key, std::string(": ") + why + " (an ARPA n-gram model)");
  };
  if (opt_.entropy) refuse("entropy", "needs a neural model's full distribution");
  if (opt_.rank) refuse("rank", "needs a neural model's full distribution");
  if (opt_.aggregate == Aggregate::Words) refuse("aggregate", "its tokens are already words");
  if (opt_.ids_input) refuse("ids", "reads words, not token ids");
  if (opt_.window.mode != WindowMode::Stateful) refuse("pad_to", "has no fixed input window");
  if (opt_.cache.on()) refuse("cache_window", "has no hidden states to point with");
}

std::vector<LineScore> NgramScorer::score(const std::vector<std::string>& lines, const std::string& source,
                                          uint64_t first_line) {
  const NgramModel& m = *model_;
  const bool document = opt_.context == ContextMode::Document;
  std::vector<LineScore> out(lines.size());
  // Tokenize every line first: a bad line throws before any state changes.
  std::vector<std::vector<std::string>> words(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const uint64_t line_no = first_line + i;
    for (size_t b = 0; b < lines[i].size();) {
      const size_t n = utf8_sequence_length(lines[i], b);
      if (n == 0) throw InputError(source, line_no, "invalid UTF-8 at byte " + std::to_string(b + 1));
      b += n;
    }
    if (opt_.normalize == Normalization::None) {
      words[i] = ngram_words(lines[i]);
    } else {
      try {
        words[i] = ngram_words(normalize(lines[i], opt_.normalize));
      } catch (const InputError& e) {
        throw InputError(source, line_no, e.detail());
      }
    }
    if (words[i].size() > kMaxLineTokens)
      throw InputError(source, line_no, Tokenizer::too_many_tokens(kMaxLineTokens));
    if (opt_.budget) opt_.budget->take(words[i].size() + 1);
    if (opt_.oov == OovPolicy::Error)
      for (const auto& w : words[i])
        if (!m.find(w))
          throw InputError(
              source, line_no,
              "'" + printable(w, 80) + "' is not among the n-gram model's unigrams (--oov error)");
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    LineScore& l = out[i];
    l.line = first_line + i;
    if (words[i].empty() && opt_.skip_empty) {
      l.skipped = true;
      continue;
    }
    NgramState fresh = opt_.add_start ? m.begin_sentence() : m.null_context();
    if (document && !doc_started_) {
      doc_state_ = fresh;
      doc_started_ = true;
    }
    NgramState& state = document ? doc_state_ : fresh;
    auto add = [&](const std::string& token, uint32_t id, bool oov, bool eos) {
      WordScore w;
      w.token = token;
      w.id = static_cast<int32_t>(id);
      w.oov = oov;
      w.eos = eos;
      w.context = static_cast<int64_t>(state.words.size());
      const NgramScore s = m.score(state, id, state);
      w.scored = true;
      w.logprob = s.log10prob * kLn10;
      w.ngram = s.length;
      ++l.tokens;
      l.logprob += w.logprob;
      if (oov) {
        ++l.oovs;
        ++l.oov_tokens;
        l.oov_logprob += w.logprob;
      }
      l.words.push_back(std::move(w));
    };
    for (const auto& token : words[i]) {
      const auto id = m.find(token);
      add(token, id.value_or(m.unk()), !id.has_value(), false);
    }
    if (opt_.append_eos) add(m.word(m.eos()), m.eos(), false, true);
  }
  return out;
}

}  // namespace lstmlm::tasks
