// The expansion of LSTM histories over a lattice. A history (token) at a state holds the LSTM state after
// its words but the last, which is pending (fed by the next step, as PrefixScorer's rows are). States are
// taken a level at a time (level: the longest arc count from the start), so every history entering a level
// is complete before it is extended; all (history, arc) rows of a level share the engine calls.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/input.hpp"
#include "lstmlm/tasks/lattice.hpp"
#include "tasks/lattice_paths.hpp"
#include "tasks/score_lines.hpp"

namespace lstmlm::tasks {

namespace {

using detail::LatticeEdge;
using detail::LatticeToken;

// An arc's words as the model reads them: the ids fed (skipped OOVs left out) and the words counted.
struct ArcWords {
  std::vector<int32_t> ids;
  int64_t words = 0;
};

std::vector<ArcWords> arc_words(const Model* model, const Lattice& l, const ScoreOptions& opt) {
  std::vector<ArcWords> out(l.arcs.size());
  ScoreOptions o = opt;
  o.append_eos = false;
  o.skip_empty = false;
  for (size_t i = 0; i < l.arcs.size(); ++i) {
    const auto& a = l.arcs[i];
    if (a.epsilon) continue;
    if (!model) {
      out[i].words = 1;
      continue;
    }
    LineScore ls = detail::tokenize_line(*model, a.word, o, LineRef{l.source, a.line});
    out[i].ids = detail::fed_ids(ls);
    out[i].words = int64_t(ls.words.size());
  }
  return out;
}

// The key of merging is the last n-1 ids of the stream (the pending one included), compared whole.
struct LatticeHistoryHash {
  size_t operator()(const std::vector<int32_t>& ids) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int32_t v : ids) h = (h ^ uint32_t(v)) * 0x100000001b3ull;
    return size_t(h);
  }
};

}  // namespace

LatticeRescorer::LatticeRescorer(Engine* engine, LatticeRescoreOptions opt)
    : engine_(engine), opt_(std::move(opt)) {
  opt_.score.skip_empty = false;
  opt_.score.validate();
  if (engine_ && !engine_->model().tokenizer().traits().tokens_are_words)
    throw UsageError("lattice rescoring needs a word model (a lattice's arcs carry words)");
  if (opt_.max_ngram_order < 0) throw UsageError::option("max_ngram_order", " must be 0 or more");
  if (opt_.max_tokens_per_node < 1) throw UsageError::option("max_tokens_per_node", " must be 1 or more");
  if (!(opt_.beam > 0)) throw UsageError::option("beam", " must be above 0");
  if (opt_.n_best < 1) throw UsageError::option("n_best", " must be 1 or more");
}

LatticeResult LatticeRescorer::rescore(const Lattice& l) {
  for (size_t k = l.score_names.size(); k < opt_.weights.size(); ++k)
    if (opt_.weights[k] != 0)
      throw UsageError("lattice '" + l.key + "' has " + std::to_string(l.score_names.size()) +
                       " scores: a weight is given for a score it does not have");
  const Model* model = engine_ ? &engine_->model() : nullptr;
  const std::vector<int32_t> order = check_lattice(l);
  const auto words = arc_words(model, l, opt_.score);
  const auto eos = model ? detail::line_end_id(*model, opt_.score) : std::nullopt;
  const size_t n = size_t(l.states);
  std::vector<std::vector<size_t>> out(n);
  for (size_t i = 0; i < l.arcs.size(); ++i) out[size_t(l.arcs[i].from)].push_back(i);
  std::vector<int32_t> final_of(n, -1);
  for (size_t f = 0; f < l.finals.size(); ++f) final_of[size_t(l.finals[f].state)] = int32_t(f);
  // Levels: the longest path (in arcs) from the start.
  std::vector<int32_t> level(n, 0);
  int32_t levels = 1;
  for (int32_t s : order)
    for (size_t a : out[size_t(s)]) {
      level[size_t(l.arcs[a].to)] = std::max(level[size_t(l.arcs[a].to)], level[size_t(s)] + 1);
      levels = std::max(levels, level[size_t(l.arcs[a].to)] + 1);
    }
  std::vector<std::vector<int32_t>> by_level(static_cast<size_t>(levels));
  for (int32_t s : order) by_level[size_t(level[size_t(s)])].push_back(s);

  auto weighted = [&](const std::vector<double>& scores) {
    double c = 0;
    for (size_t k = 0; k < opt_.weights.size() && k < scores.size(); ++k)
      if (opt_.weights[k] != 0) c += opt_.weights[k] * scores[k];
    return c;
  };

  detail::LatticeSearch s;
  s.tokens.reserve(1024);
  std::vector<std::vector<int32_t>> at(n);  // the live tokens of each state
  std::vector<std::unordered_map<std::vector<int32_t>, int32_t, LatticeHistoryHash>> merge(
      opt_.max_ngram_order > 0 ? n : 0);
  const size_t keep = opt_.max_ngram_order > 0 ? size_t(opt_.max_ngram_order - 1) : 0;
  {
    LatticeToken t;
    t.state = l.start;
    if (model) {
      t.lstm = std::make_shared<const State>(State::zeros(*model));
      t.pending = start_token(model->tokenizer());
      if (t.pending >= 0 && keep > 0) t.history.push_back(t.pending);
    }
    s.tokens.push_back(std::move(t));
    at[size_t(l.start)].push_back(0);
  }
  ++stats_.histories;
  ++stats_.lattices;
  stats_.arcs += int64_t(l.arcs.size());

  // Keeps the best `k` of `live` (the first on a tie); the others are dropped with their LSTM states.
  auto cut = [&](std::vector<int32_t>& live, size_t k, size_t state) {
    std::stable_sort(live.begin(), live.end(), [&](int32_t a, int32_t b) {
      return s.tokens[size_t(a)].score > s.tokens[size_t(b)].score;
    });
    for (size_t i = k; i < live.size(); ++i) {
      LatticeToken& t = s.tokens[size_t(live[i])];
      t.lstm.reset();
      if (!merge.empty()) merge[state].erase(t.history);
    }
    stats_.pruned += int64_t(live.size() > k ? live.size() - k : 0);
    if (live.size() > k) live.resize(k);
  };

  // A history entering `to` by edge `e`: merged with one that shares its last n-1 words, or added.
  auto arrive = [&](LatticeToken&& t, const LatticeEdge& e) {
    ++stats_.histories;
    t.edges.push_back(e);
    const size_t to = size_t(t.state);
    if (opt_.max_ngram_order > 0) {
      if (t.history.size() > keep) t.history.erase(t.history.begin(), t.history.end() - std::ptrdiff_t(keep));
      auto [it, fresh] = merge[to].try_emplace(t.history, int32_t(s.tokens.size()));
      if (!fresh) {
        ++stats_.merged;
        LatticeToken& old = s.tokens[size_t(it->second)];
        if (!(t.score > old.score)) {  // the first on a tie
          old.edges.push_back(e);
          return;
        }
        // The new history wins: it takes the place (and the other entering edges) of the old one.
        t.edges.insert(t.edges.begin(), old.edges.begin(), old.edges.end());
        old.edges.clear();
        old.lstm.reset();
        auto& list = at[to];
        std::replace(list.begin(), list.end(), it->second, int32_t(s.tokens.size()));
        it->second = int32_t(s.tokens.size());
        s.tokens.push_back(std::move(t));
        return;
      }
    }
    at[to].push_back(int32_t(s.tokens.size()));
    s.tokens.push_back(std::move(t));
    // Arrivals beyond twice the bound are cut back to it at once: the LSTM states held stay bounded.
    if (at[to].size() > 2 * size_t(opt_.max_tokens_per_node))
      cut(at[to], size_t(opt_.max_tokens_per_node), to);
  };

  // The rows of one level: a (token, arc) step sequence, or (token, final) for eos.
  struct Row {
    int32_t token;
    int32_t arc;    // -1: the final's eos
    int32_t final;  // for eos rows
    std::vector<int32_t> in, target;
    int32_t same = -1;  // the row of the same word sequence, whose step this one shares
    int32_t dest = 0;   // the trie node of the history after the row
  };
  std::vector<Row> rows;
  // The word sequences of the histories, as a trie: two histories on the same node of it have fed the same
  // ids, so they hold the same LSTM state (the engine is batch-invariant) and the same next step.
  std::unordered_map<uint64_t, int32_t> trie;
  auto walk = [&](int32_t node, const std::vector<int32_t>& ids) {
    for (int32_t id : ids)
      node = trie.try_emplace(uint64_t(uint32_t(node)) << 32 | uint32_t(id), int32_t(trie.size() + 1))
                 .first->second;
    return node;
  };
  std::unordered_map<int32_t, int32_t> first_row;  // of this level: trie node after the step -> its row
  Sequences inputs, targets;
  std::vector<State> states;
  std::vector<std::vector<float>> lp;

  for (const auto& states_of_level : by_level) {
    rows.clear();
    first_row.clear();
    for (int32_t st : states_of_level) {
      auto& live = at[size_t(st)];
      // Pruning: the beam below the node's best, then the best max_tokens_per_node.
      double best = -std::numeric_limits<double>::infinity();
      for (int32_t t : live) best = std::max(best, s.tokens[size_t(t)].score);
      size_t kept = 0;
      for (int32_t t : live) kept += s.tokens[size_t(t)].score >= best - opt_.beam ? 1 : 0;
      cut(live, std::min(kept, size_t(opt_.max_tokens_per_node)), size_t(st));
      for (int32_t ti : live) {
        const LatticeToken& t = s.tokens[size_t(ti)];
        // A word on several arcs out of a node (the same word at other times), or after the same words at
        // another node, is one step.
        for (size_t a : out[size_t(st)]) {
          const auto& ids = words[a].ids;
          Row r{ti, int32_t(a), -1, {}, {}};
          r.dest = t.trie;
          if (model && !ids.empty()) {
            r.dest = walk(t.trie, ids);
            auto [it, fresh] = first_row.try_emplace(r.dest, int32_t(rows.size()));
            if (!fresh) {
              r.same = it->second;
              rows.push_back(std::move(r));
              continue;
            }
          }
          if (model && !ids.empty()) {
            if (t.pending >= 0) {
              r.in.push_back(t.pending);
              r.in.insert(r.in.end(), ids.begin(), ids.end() - 1);
              r.target = ids;
            } else {
              r.in.assign(ids.begin(), ids.end() - 1);
              r.target.assign(ids.begin() + 1, ids.end());
            }
          }
          rows.push_back(std::move(r));
        }
        const int32_t f = final_of[size_t(st)];
        if (f >= 0) {
          Row r{ti, -1, f, {}, {}};
          if (eos && t.pending >= 0) {
            r.dest = walk(t.trie, {*eos});
            auto [it, fresh] = first_row.try_emplace(r.dest, int32_t(rows.size()));
            if (!fresh) {
              r.same = it->second;
            } else {
              r.in.push_back(t.pending);
              r.target.push_back(*eos);
            }
          }
          rows.push_back(std::move(r));
        }
      }
    }
    // The steps, batch_size rows to an engine call; rows without a step go through as they are.
    std::vector<std::vector<float>> row_lp(rows.size());
    std::vector<std::shared_ptr<const State>> row_state(rows.size());
    std::vector<size_t> stepped;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].same >= 0) continue;
      if (rows[i].in.empty()) {
        row_state[i] = s.tokens[size_t(rows[i].token)].lstm;
      } else {
        stepped.push_back(i);
      }
    }
    const size_t bs = size_t(opt_.score.batch_size);
    for (size_t b = 0; b < stepped.size(); b += bs) {
      const size_t e = std::min(stepped.size(), b + bs);
      inputs.assign(e - b, {});
      targets.assign(e - b, {});
      states.clear();
      for (size_t k = b; k < e; ++k) {
        Row& r = rows[stepped[k]];
        inputs[k - b] = r.in;
        targets[k - b] = r.target;
        states.push_back(*s.tokens[size_t(r.token)].lstm);
        stats_.steps += int64_t(r.in.size());
      }
      engine_->score(inputs, targets, states, lp);
      ++stats_.calls;
      for (size_t k = b; k < e; ++k) {
        row_lp[stepped[k]] = std::move(lp[k - b]);
        row_state[stepped[k]] = std::make_shared<const State>(std::move(states[k - b]));
      }
    }
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].same >= 0) {
        row_lp[i] = row_lp[size_t(rows[i].same)];
        row_state[i] = row_state[size_t(rows[i].same)];
      }
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const LatticeToken& from = s.tokens[size_t(r.token)];
      double lm = 0;
      for (float v : row_lp[i]) lm += double(v);
      LatticeEdge e{r.token, r.arc, r.final, row_lp[i]};
      if (r.arc < 0) {
        const double total = from.score + opt_.lm_weight * lm + weighted(l.finals[size_t(r.final)].scores);
        s.completions.push_back({r.token, r.final, total, row_lp[i]});
        continue;
      }
      const auto& arc = l.arcs[size_t(r.arc)];
      LatticeToken t;
      t.state = arc.to;
      t.lstm = row_state[i];
      t.trie = r.dest;
      t.pending = from.pending;
      const auto& ids = words[size_t(r.arc)].ids;
      if (!ids.empty()) t.pending = ids.back();
      if (keep > 0) {  // only merging reads the last words (the trie tells histories apart)
        t.history = from.history;
        t.history.insert(t.history.end(), ids.begin(), ids.end());
      }
      t.score = from.score + opt_.lm_weight * lm + weighted(arc.scores) +
                opt_.word_penalty * double(words[size_t(r.arc)].words);
      t.prev = r.token;
      t.arc = r.arc;
      t.lp = row_lp[i];
      arrive(std::move(t), e);
    }
    // The states of this level's histories are not needed any more (their successors hold theirs).
    for (int32_t st : states_of_level)
      for (int32_t ti : at[size_t(st)]) s.tokens[size_t(ti)].lstm.reset();
  }

  detail::LatticeOutput want{opt_.n_best, opt_.lattice_out, opt_.weights, opt_.lm_weight, opt_.word_penalty};
  return detail::lattice_result(s, l, model, opt_.score, want);
}

}  // namespace lstmlm::tasks
