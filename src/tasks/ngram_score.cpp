#include "lstmlm/tasks/ngram_score.hpp"

#include <algorithm>
#include <cmath>

#include "lstmlm/error.hpp"
#include "lstmlm/normalize.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/predict.hpp"
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

namespace lstmlm::tasks {

std::vector<Prediction> predict_ngram(const NgramModel& m, const std::vector<std::string>& contexts,
                                      const PredictOptions& opt, const std::string& source,
                                      uint64_t first_line) {
  opt.validate();
  auto refuse = [](const char* key, const char* what) {
    throw UsageError::option(key, std::string(": an n-gram model ") + what);
  };
  if (opt.ids_input) refuse("ids", "reads words, not token ids");
  if (opt.window.windowed()) refuse("pad_to", "has no fixed input window");
  if (opt.boost) refuse("boost", "is not boosted (a boost file is read for a neural model's vocabulary)");
  if (opt.mix) refuse("mix", "is mixed into a neural model, not the other way round");
  const auto V = m.vocab_size();
  std::vector<Prediction> out(contexts.size());
  std::vector<uint32_t> order(V);
  std::vector<double> lp(V);
  for (size_t i = 0; i < contexts.size(); ++i) {
    const uint64_t line_no = first_line + i;
    for (size_t b = 0; b < contexts[i].size();) {
      const size_t n = utf8_sequence_length(contexts[i], b);
      if (n == 0) throw InputError(source, line_no, "invalid UTF-8 at byte " + std::to_string(b + 1));
      b += n;
    }
    NgramState state = opt.add_start ? m.begin_sentence() : m.null_context();
    Prediction& p = out[i];
    if (opt.add_start) p.ids.push_back(static_cast<int32_t>(m.bos()));
    const auto words = ngram_words(contexts[i]);
    if (words.size() > kMaxLineTokens)
      throw InputError(source, line_no, Tokenizer::too_many_tokens(kMaxLineTokens));
    for (const auto& w : words) {
      const auto id = m.find(w);
      if (!id && opt.oov == OovPolicy::Error)
        throw InputError(source, line_no,
                         "'" + printable(w, 80) + "' is not among the n-gram model's unigrams (--oov error)");
      const uint32_t fed = id.value_or(m.unk());
      m.score(state, fed, state);
      p.ids.push_back(static_cast<int32_t>(fed));
    }
    size_t n = 0;
    for (uint32_t w = 0; w < V; ++w) {
      if (w == m.bos()) continue;
      if (!opt.prefix.empty() && (w == m.unk() || w == m.eos() || m.word(w).rfind(opt.prefix, 0) != 0))
        continue;
      lp[w] = m.score(state, w).log10prob * kLn10;
      order[n++] = w;
    }
    const size_t top = opt.top <= 0 ? n : std::min(n, static_cast<size_t>(opt.top));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top),
                      order.begin() + static_cast<std::ptrdiff_t>(n),
                      [&](uint32_t a, uint32_t b) { return lp[a] > lp[b] || (lp[a] == lp[b] && a < b); });
    for (size_t k = 0; k < top; ++k) {
      Candidate c;
      c.id = static_cast<int32_t>(order[k]);
      c.token = m.word(order[k]);
      c.logprob = static_cast<float>(lp[order[k]]);
      c.prob = std::exp(lp[order[k]]);
      p.top.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace lstmlm::tasks
