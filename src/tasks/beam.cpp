// Beam search (tasks/beam.hpp, docs/generation.md): one prefill, then the live hypotheses stepped as one
// batch; each step keeps the best continuations of all of them together.
#include "lstmlm/tasks/beam.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/window.hpp"
#include "tasks/steer.hpp"

namespace lstmlm::tasks {

double length_penalty(double alpha, size_t len) {
  if (alpha == 0) return 1.0;
  return std::pow((5.0 + static_cast<double>(len)) / 6.0, alpha);
}

namespace {

struct Live {
  int32_t node = -1;  // its last token in the tree of tokens (-1: none yet)
  size_t length = 0;
  std::vector<int32_t> history;  // the prompt's tokens and the generated ones (boost, no-repeat)
  std::vector<int32_t> context;  // the fed ids, start token included (windowed models, mixtures)
  double score = 0;              // sum of the steered log-probs
  double logprob = 0;            // sum of the model's
  detail::TextTail tail;         // the generated text (stop strings, messages)
  int32_t cursor = 0;            // the constraint's
  bool eos = false;
  std::string stopped_at;
};

struct BeamCandidate {
  double score;
  uint32_t beam;
  int32_t id;
  float steered;  // the steered log-prob the score adds
  float model;    // the model's (or the mixture's) ln p
};

// Higher score first, then the earlier hypothesis, then the lower id: a total order, so the kept set never
// depends on how a sort breaks ties.
bool beam_better(const BeamCandidate& a, const BeamCandidate& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.beam != b.beam) return a.beam < b.beam;
  return a.id < b.id;
}

// The tokens no_repeat_ngram forbids after `h`: those completing an n-gram of `n` tokens already in it.
void banned_tokens(std::span<const int32_t> h, int n, std::vector<int32_t>& out) {
  out.clear();
  if (n <= 0 || h.size() < static_cast<size_t>(n - 1) + 1) return;
  const size_t m = static_cast<size_t>(n - 1);
  const auto tail = h.subspan(h.size() - m);
  for (size_t i = 0; i + m < h.size(); ++i)
    if (std::equal(tail.begin(), tail.end(), h.begin() + static_cast<std::ptrdiff_t>(i)))
      out.push_back(h[i + m]);
  std::sort(out.begin(), out.end());
}

// The `width` best allowed tokens of one row (value descending, id ascending) as candidates of `beam`.
void best_of_row(std::span<const float> row, const int32_t* next, std::span<const int32_t> banned,
                 double base, uint32_t beam, size_t width, std::vector<BeamCandidate>& kept,
                 std::vector<BeamCandidate>& out) {
  kept.clear();
  auto worse_id = [](const BeamCandidate& a, const BeamCandidate& b) {
    return a.steered > b.steered || (a.steered == b.steered && a.id < b.id);
  };
  // A value must exceed `bar` to enter: -inf until `kept` is full (so -inf and NaN never do), then the worst
  // kept value (an equal one comes later, with a higher id, and stays out).
  // Blocks of 32 with no value above it are passed over whole: once `kept` is full, one branch-free
  // (vectorizable) test per block instead of a compare and branch per token.
  float bar = -std::numeric_limits<float>::infinity();
  const size_t V = row.size();
  const float* r = row.data();
  for (size_t b = 0; b < V; b += 32) {
    const size_t e = std::min(V, b + 32);
    int above = 0;
    for (size_t j = b; j < e; ++j) above |= r[j] > bar;
    if (!above) continue;
    for (size_t j = b; j < e; ++j) {
      const float v = row[j];
      if (!(v > bar)) continue;
      if (next && next[j] < 0) continue;
      const auto id = static_cast<int32_t>(j);
      if (!banned.empty() && std::binary_search(banned.begin(), banned.end(), id)) continue;
      BeamCandidate c{0, beam, id, v, 0};
      kept.insert(std::upper_bound(kept.begin(), kept.end(), c, worse_id), c);
      if (kept.size() > width) kept.pop_back();
      if (kept.size() == width) bar = kept.back().steered;
    }
  }
  for (auto c : kept) {
    c.score = base + static_cast<double>(c.steered);
    out.push_back(c);
  }
}

}  // namespace

BeamResult beam_search(Engine& engine, const GenerateOptions& o, const std::function<void()>& between_steps) {
  const Model& model = engine.model();
  o.validate();
  if (!o.beam.on()) throw UsageError::option("beam_size", " must be >= 1 for a beam search");
  const Tokenizer& tok = model.tokenizer();
  const std::optional<int32_t> eos = tok.eos_id();
  const bool stop_eos = o.stop_at_eos.value_or(eos.has_value()) && eos.has_value();
  const auto K = static_cast<size_t>(o.beam.beam_size);
  const auto V = static_cast<size_t>(model.vocab_size());

  BeamResult r;
  r.prompt = prompt_context(model, o.prompt, o.oov, o.window.mode == WindowMode::Pad, o.budget.get());
  std::optional<WindowedPredictor> windowed;
  if (o.window.windowed()) windowed.emplace(engine, o.window);
  const bool from_start = start_token(tok) >= 0;
  const bool keep_context = windowed.has_value() || o.mix != nullptr;
  // The generated text is kept for stop strings and a constraint's messages only.
  const bool track_text = !o.stop.empty() || o.constraint != nullptr;

  std::vector<State> states;
  MatrixRM lp;
  detail::prefill(engine, windowed, r.prompt.context, states, lp);

  std::vector<Live> beams(1);
  // The history is kept for the boost's phrases and no_repeat_ngram only: a copy per continuation costs.
  const bool track_history = o.boost != nullptr || o.beam.no_repeat_ngram > 0;
  if (track_history)
    for (const auto& t : r.prompt.tokens) beams[0].history.push_back(t.id);
  if (keep_context) beams[0].context = r.prompt.context;
  if (o.constraint) beams[0].cursor = o.constraint->start();

  struct TreeNode {
    GeneratedToken token;
    int32_t parent;
  };
  std::vector<TreeNode> tree;
  std::vector<BeamHypothesis> finished;
  auto finish = [&](Live&& b) {
    BeamHypothesis h;
    // The tokens, from the last back along the parents: a continuation stores one node, not a copy.
    h.tokens.resize(b.length);
    for (int32_t n = b.node, k = static_cast<int32_t>(b.length); n >= 0;
         n = tree[static_cast<size_t>(n)].parent)
      h.tokens[static_cast<size_t>(--k)] = tree[static_cast<size_t>(n)].token;
    h.total_logprob = b.logprob;
    h.stopped_at_eos = b.eos;
    h.stopped_at = std::move(b.stopped_at);
    h.score = b.score / length_penalty(o.beam.length_penalty, h.tokens.size());
    finished.push_back(std::move(h));
  };
  // The best hypothesis a constraint ended, for the message when none survives.
  struct DeadEnd {
    int step;
    std::string prefix;
    bool too_short;  // at the last step: no token ends in a match
  };
  std::optional<DeadEnd> dead;

  std::vector<float> mixed, steered_buf;
  std::vector<int32_t> banned, finish_row;
  std::vector<uint32_t> uses;
  std::vector<BeamCandidate> cands, kept;
  Sequences next_ids;
  std::vector<Live> grown;
  std::vector<State> next_states;
  MatrixRM part;
  const size_t chunk = o.beam.batch_size > 0 ? static_cast<size_t>(o.beam.batch_size) : K;
  for (int step = 0; step < o.max_tokens && !beams.empty(); ++step) {
    const size_t width = K - std::min(K, finished.size());
    if (width == 0) break;
    cands.clear();
    for (size_t b = 0; b < beams.size(); ++b) {
      Live& beam = beams[b];
      const float* row = lp.row(static_cast<Eigen::Index>(b)).data();
      if (o.mix) {
        mixed.assign(row, row + V);
        o.mix->apply(beam.context, from_start, mixed.data());
        row = mixed.data();
      }
      const std::span<const float> steered = detail::steer(o, beam.history, {row, V}, steered_buf);
      const int32_t* next = nullptr;
      bool too_short = false;
      if (o.constraint) {
        const auto cr = o.constraint->row(beam.cursor);
        if (!cr.all) next = cr.next;
        // The last step takes only tokens that end in a match.
        if (step + 1 >= o.max_tokens) {
          too_short = !o.constraint->finishing(beam.cursor, finish_row);
          next = finish_row.data();
        }
      }
      banned_tokens(beam.history, o.beam.no_repeat_ngram, banned);
      const size_t before = cands.size();
      best_of_row(steered, next, banned, beam.score, static_cast<uint32_t>(b), width, kept, cands);
      for (size_t c = before; c < cands.size(); ++c) cands[c].model = row[static_cast<size_t>(cands[c].id)];
      if (cands.size() == before) {
        // Nothing may follow: the text ends here if the constraint accepts it (no-repeat alone: always).
        if (!o.constraint || (o.constraint->accepts(beam.cursor) && !too_short))
          finish(Live(beam));
        else if (!dead)
          dead = DeadEnd{step + 1, beam.tail.text, too_short};
      }
    }
    const size_t take = std::min(width, cands.size());
    std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(take), cands.end(),
                      beam_better);
    cands.resize(take);

    grown.clear();
    size_t rows = 0;  // next_ids keeps its one-token rows from step to step: no allocation per row
    next_states.clear();
    const bool last = step + 1 >= o.max_tokens;
    // A hypothesis' last continuation takes its history and state over; only the others copy them.
    uses.assign(beams.size(), 0);
    for (const auto& c : cands) ++uses[c.beam];
    for (const auto& c : cands) {
      const bool final_use = --uses[c.beam] == 0;
      Live nb = final_use ? std::move(beams[c.beam]) : beams[c.beam];
      const GeneratedToken t{c.id, c.model};
      tree.push_back({t, nb.node});
      nb.node = static_cast<int32_t>(tree.size()) - 1;
      ++nb.length;
      nb.score = c.score;
      nb.logprob += t.logprob;
      if (track_history) nb.history.push_back(c.id);
      if (keep_context) nb.context.push_back(c.id);
      bool done = false;
      if (stop_eos && c.id == *eos) {
        nb.eos = done = true;
      } else if (track_text && nb.tail.append(tok, c.id, o.stop, nb.stopped_at)) {
        done = true;
      }
      if (o.constraint) {
        nb.cursor = o.constraint->row(nb.cursor).next[c.id];
        const auto cr = o.constraint->row(nb.cursor);
        if (!done && !cr.any) {
          if (!cr.accepting) {
            if (!dead) dead = DeadEnd{step + 2, nb.tail.text, false};
            continue;
          }
          done = true;
        }
      }
      if (done || last) {
        finish(std::move(nb));
        continue;
      }
      if (rows == next_ids.size()) next_ids.emplace_back(1);
      next_ids[rows++][0] = c.id;
      next_states.push_back(final_use ? std::move(states[c.beam]) : states[c.beam]);
      grown.push_back(std::move(nb));
    }
    next_ids.resize(rows);
    beams.swap(grown);
    states = std::move(next_states);
    if (between_steps) between_steps();
    if (beams.empty() || last) break;
    // The live hypotheses advance together, `chunk` rows per engine call.
    const auto n = static_cast<Eigen::Index>(beams.size());
    for (size_t at = 0; at < beams.size(); at += chunk) {
      const size_t end = std::min(beams.size(), at + chunk);
      const bool whole = at == 0 && end == beams.size();
      MatrixRM& out = whole ? lp : part;
      if (whole && !windowed) {
        engine.predict(next_ids, states, lp);
      } else if (windowed) {
        std::vector<std::span<const int32_t>> rows_part;
        for (size_t b = at; b < end; ++b) rows_part.emplace_back(beams[b].context);
        windowed->predict(rows_part, out);
      } else {
        Sequences ids(next_ids.begin() + static_cast<std::ptrdiff_t>(at),
                      next_ids.begin() + static_cast<std::ptrdiff_t>(end));
        std::vector<State> st(std::make_move_iterator(states.begin() + static_cast<std::ptrdiff_t>(at)),
                              std::make_move_iterator(states.begin() + static_cast<std::ptrdiff_t>(end)));
        engine.predict(ids, st, out);
        std::move(st.begin(), st.end(), states.begin() + static_cast<std::ptrdiff_t>(at));
      }
      if (!whole) {
        if (at == 0) lp.resize(n, static_cast<Eigen::Index>(V));
        lp.middleRows(static_cast<Eigen::Index>(at), static_cast<Eigen::Index>(end - at)) = part;
      }
    }
  }
  if (finished.empty()) {
    if (o.constraint && dead) {
      if (dead->too_short) detail::refuse_too_short(o, dead->prefix);
      detail::refuse_dead_end(o, dead->step, dead->prefix);
    }
    if (o.max_tokens > 0) throw ModelError("beam search: the model gave no finite log-probability");
    finished.emplace_back();  // nothing generated: the empty text
  }
  // Best first by score; equal scores keep the order they finished in.
  std::stable_sort(finished.begin(), finished.end(),
                   [](const BeamHypothesis& a, const BeamHypothesis& b) { return a.score > b.score; });
  if (finished.size() > static_cast<size_t>(o.beam.n_best))
    finished.resize(static_cast<size_t>(o.beam.n_best));
  for (size_t i = 0; i < finished.size(); ++i) finished[i].index = static_cast<int>(i);
  r.hypotheses = std::move(finished);
  return r;
}

}  // namespace lstmlm::tasks
