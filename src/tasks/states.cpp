#include "lstmlm/tasks/states.hpp"

#include <algorithm>

#include "lstmlm/error.hpp"
#include "tasks/score_lines.hpp"

namespace lstmlm::tasks {

StateReader::StateReader(Engine& engine, ScoreOptions opt) : engine_(&engine), opt_(std::move(opt)) {
  if (opt_.window.windowed() || opt_.cache.on() || opt_.entropy || opt_.rank ||
      opt_.aggregate == Aggregate::Words)
    throw UsageError("states: windows, the cache, entropy, rank and word aggregation do not apply");
  opt_.validate();
  start_ = opt_.add_start ? start_token(engine.model().tokenizer()) : -1;
  doc_state_ = State::zeros(engine.model());
}

std::vector<LineStates> StateReader::read(const std::vector<std::string>& lines, const std::string& source,
                                          uint64_t first_line, const std::vector<LineEnd>& ends) {
  const Model& model = engine_->model();
  const bool doc = opt_.context == ContextMode::Document;
  std::vector<LineStates> out(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const LineScore l = detail::tokenize_line(model, lines[i], opt_, LineRef{source, first_line + i},
                                              i < ends.size() ? ends[i] : LineEnd::Lf);
    out[i].line = l.line;
    out[i].skipped = l.skipped;
    if (l.skipped) continue;
    // The start token opens every line in sentence mode and the stream once in document mode.
    if (start_ >= 0 && (!doc || !doc_started_)) out[i].ids.push_back(start_);
    doc_started_ = true;
    const auto fed = detail::fed_ids(l);
    out[i].ids.insert(out[i].ids.end(), fed.begin(), fed.end());
    for (int32_t id : out[i].ids) out[i].tokens.push_back(model.vocab().token(id));
  }
  const size_t L = model.config().layers.size();
  auto alloc = [&](LineStates& s, const State& like) {
    const auto n = static_cast<Eigen::Index>(s.ids.size());
    for (size_t k = 0; k < L; ++k) {
      s.h.emplace_back(n, static_cast<Eigen::Index>(like.h[k].size()));
      s.c.emplace_back(like.c.size() > k && !like.c[k].empty() ? n : 0,
                       static_cast<Eigen::Index>(like.c.size() > k ? like.c[k].size() : 0));
    }
  };
  auto store = [&](LineStates& s, size_t t, const State& st) {
    const auto row = static_cast<Eigen::Index>(t);
    for (size_t k = 0; k < L; ++k) {
      std::copy(st.h[k].begin(), st.h[k].end(), s.h[k].row(row).data());
      if (s.c[k].rows() > 0) std::copy(st.c[k].begin(), st.c[k].end(), s.c[k].row(row).data());
    }
  };
  if (doc) {  // one stream: the lines in order, the state carried
    for (LineStates& s : out) {
      if (s.skipped) continue;
      alloc(s, doc_state_);
      std::vector<State> one{doc_state_};
      for (size_t t = 0; t < s.ids.size(); ++t) {
        engine_->advance(Sequences{{s.ids[t]}}, one);
        store(s, t, one[0]);
      }
      doc_state_ = one[0];
    }
    return out;
  }
  // Sentence mode: batches of lines, each step advancing every line that still has a token.
  const size_t bs = static_cast<size_t>(std::max(1, opt_.batch_size));
  std::vector<size_t> order;
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].skipped && !out[i].ids.empty()) order.push_back(i);
  const State zero = State::zeros(model);
  for (size_t b = 0; b < order.size(); b += bs) {
    const size_t n = std::min(bs, order.size() - b);
    std::vector<State> states(n, zero);
    size_t longest = 0;
    for (size_t r = 0; r < n; ++r) {
      alloc(out[order[b + r]], zero);
      longest = std::max(longest, out[order[b + r]].ids.size());
    }
    for (size_t t = 0; t < longest; ++t) {
      Sequences in;
      std::vector<State> live;
      std::vector<size_t> rows;
      for (size_t r = 0; r < n; ++r)
        if (t < out[order[b + r]].ids.size()) {
          in.push_back({out[order[b + r]].ids[t]});
          live.push_back(std::move(states[r]));
          rows.push_back(r);
        }
      engine_->advance(in, live);
      for (size_t j = 0; j < rows.size(); ++j) {
        store(out[order[b + rows[j]]], t, live[j]);
        states[rows[j]] = std::move(live[j]);
      }
    }
  }
  return out;
}

}  // namespace lstmlm::tasks
