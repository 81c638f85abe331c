#include "tasks/score_lines.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "lstmlm/error.hpp"
#include "lstmlm/normalize.hpp"

namespace lstmlm::tasks::detail {

LineScore tokenize_line(const Model& model, const std::string& text, const ScoreOptions& opt,
                        const LineRef& where, LineEnd end) {
  LineScore l;
  l.line = where.line;
  std::string normalized;
  if (opt.normalize != Normalization::None) {
    try {
      normalized = lstmlm::normalize(text, opt.normalize);
    } catch (const InputError& e) {
      throw where.error(e.message());
    }
  }
  auto toks = read_tokens(model, opt.normalize == Normalization::None ? text : normalized, opt.ids_input,
                          opt.oov, where);
  if (opt.budget) opt.budget->take(toks.size());
  if (toks.empty() && opt.skip_empty) {
    l.skipped = true;
    return l;
  }
  for (auto& t : toks) {
    l.words.push_back(WordScore{std::move(t.text), t.id, t.oov, false, false, 0.0f});
    if (t.oov) ++l.oovs;
  }
  if (opt.reverse) std::reverse(l.words.begin(), l.words.end());
  const bool chars = line_end_chars(model, opt);
  // The file's last line has no line break to feed (as a character, or as the eos that stands for it).
  if ((chars || model.config().tokenizer.eos_is_line_break) && end == LineEnd::None) return l;
  if (chars && end == LineEnd::CrLf)
    // The "\r" is a character of the text, not the line end: a plain token (a model whose vocabulary
    // lacks it never saw one, so it is dropped as the reader drops it elsewhere).
    if (auto cr = model.vocab().find("\r"))
      l.words.push_back(WordScore{model.vocab().token(*cr), *cr, false, false, false, 0.0f});
  if (auto id = line_end_id(model, opt))
    l.words.push_back(WordScore{model.vocab().token(*id), *id, false, true, false, 0.0f});
  return l;
}

bool line_end_chars(const Model& model, const ScoreOptions& opt) {
  return opt.append_eos && opt.context == ContextMode::Document &&
         model.tokenizer().traits().line_break_is_text && model.vocab().find("\n").has_value();
}

std::optional<int32_t> line_end_id(const Model& model, const ScoreOptions& opt) {
  if (!opt.append_eos) return std::nullopt;
  // A char model that has "\n" saw the file's line breaks as that character in training (char-rnn reads
  // the text's bytes), so the document's stream is the text itself: "\n" ends each line, not eos.
  if (line_end_chars(model, opt)) return model.vocab().find("\n");
  return model.tokenizer().eos_id();
}

std::vector<int32_t> fed_ids(const LineScore& l, int32_t zero) {
  std::vector<int32_t> ids;
  for (const auto& w : l.words)
    if (w.id >= 0)
      ids.push_back(w.id);
    else if (zero >= 0 && w.oov)
      ids.push_back(zero);
  return ids;
}

namespace {

template <class T>
void fill_values(LineScore& l, const T* lp, bool first_is_context, const float* entropy, const int32_t* rank,
                 bool zero_oov) {
  bool context = first_is_context;
  for (auto& w : l.words) {
    const bool fed = w.id >= 0 || (zero_oov && w.oov);
    if (!fed) continue;
    if (context) {
      context = false;
      continue;
    }
    const double v = *lp++;
    const float* e = entropy ? entropy++ : nullptr;
    const int32_t* k = rank ? rank++ : nullptr;
    if (w.id < 0) continue;  // fed as the zero input, not scored
    w.scored = true;
    w.logprob = v;
    if (e) w.entropy = *e;
    if (k) w.rank = *k;
    ++l.tokens;
    if (!std::isfinite(v)) ++l.nonfinite;
    l.logprob += v;
    if (w.oov) {
      ++l.oov_tokens;
      l.oov_logprob += v;
    }
  }
}

}  // namespace

void fill_line(LineScore& l, const float* lp, bool first_is_context, const float* entropy,
               const int32_t* rank) {
  fill_values(l, lp, first_is_context, entropy, rank, false);
}

void fill_line(LineScore& l, const double* lp, bool first_is_context, const float* entropy,
               const int32_t* rank, bool zero_oov) {
  fill_values(l, lp, first_is_context, entropy, rank, zero_oov);
}

void sentence_row(std::span<const int32_t> ids, int32_t start, std::vector<int32_t>& inputs,
                  std::vector<int32_t>& targets) {
  if (start >= 0) {
    inputs.assign(1, start);
    inputs.insert(inputs.end(), ids.begin(), ids.end() - 1);
    targets.assign(ids.begin(), ids.end());
  } else {
    inputs.assign(ids.begin(), ids.end() - 1);
    targets.assign(ids.begin() + 1, ids.end());
  }
}

void stream_row(int32_t pending, std::span<const int32_t> ids, std::vector<int32_t>& inputs,
                std::vector<int32_t>& targets) {
  inputs.assign(1, pending);
  inputs.insert(inputs.end(), ids.begin(), ids.end() - 1);
  targets.assign(ids.begin(), ids.end());
}

WindowRows window_rows(const std::vector<std::span<const int32_t>>& lines, bool document, int32_t start,
                       const std::vector<int32_t>& history) {
  WindowRows w;
  w.bufs.reserve(lines.size() + 1);  // never reallocated: the rows point into the buffers
  w.first_row.resize(lines.size());
  w.first_is_context.assign(lines.size(), false);
  if (document) {
    w.bufs.emplace_back(history);
    for (const auto& l : lines) w.bufs[0].insert(w.bufs[0].end(), l.begin(), l.end());
  }
  size_t pos = document ? history.size() : 0;  // document mode: where line i's ids start in bufs[0]
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!document) {
      w.bufs.emplace_back();
      if (start >= 0) w.bufs.back().push_back(start);
      pos = w.bufs.back().size();
      w.bufs.back().insert(w.bufs.back().end(), lines[i].begin(), lines[i].end());
    }
    const std::vector<int32_t>& buf = w.bufs.back();
    w.first_row[i] = w.rows.size();
    for (size_t k = 0; k < lines[i].size(); ++k, ++pos) {
      if (pos == 0) {  // no start token and nothing before: context only
        w.first_is_context[i] = true;
        continue;
      }
      w.rows.emplace_back(buf.data(), pos);
      w.targets.push_back(buf[pos]);
    }
  }
  return w;
}

void keep_history(WindowRows& w, int window, std::vector<int32_t>& history) {
  std::vector<int32_t>& all = w.bufs[0];
  const auto n = static_cast<size_t>(window);
  if (all.size() > n) all.erase(all.begin(), all.end() - static_cast<ptrdiff_t>(n));
  history = std::move(all);
}

}  // namespace lstmlm::tasks::detail
