#include "tasks/lattice_paths.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/input.hpp"
#include "lstmlm/text.hpp"
#include "tasks/score_lines.hpp"

namespace lstmlm::tasks::detail {

namespace {

// A completed path's best way back: its arcs and step log-probs, in order.
void trace(const LatticeSearch& s, const LatticeCompletion& c, std::vector<size_t>& arcs,
           std::vector<float>& lp) {
  std::vector<const LatticeToken*> chain;
  for (int32_t t = c.token; t > 0; t = s.tokens[size_t(t)].prev) chain.push_back(&s.tokens[size_t(t)]);
  arcs.clear();
  lp.clear();
  for (size_t i = chain.size(); i-- > 0;) {
    arcs.push_back(size_t(chain[i]->arc));
    lp.insert(lp.end(), chain[i]->lp.begin(), chain[i]->lp.end());
  }
  lp.insert(lp.end(), c.lp.begin(), c.lp.end());
}

// Kaldi's graph cost, or SLF's lm log-prob: everything in the combination but the acoustic term.
void replace_lm(Lattice& out, std::vector<double>& scores, const std::vector<double>& weights, double lm,
                double words, const LatticeOutput& want) {
  const auto& names = out.score_names;
  const auto ac = std::find(names.begin(), names.end(), "acoustic") - names.begin();
  double rest = want.lm_weight * lm + want.word_penalty * words;
  for (size_t k = 0; k < scores.size(); ++k)
    if (std::ptrdiff_t(k) != ac && k < weights.size() && weights[k] != 0) rest += weights[k] * scores[k];
  for (size_t k = 0; k < scores.size(); ++k)
    if (std::ptrdiff_t(k) != ac) scores[k] = 0;
  const size_t lm_at = out.format == LatticeFormat::Kaldi ? 0 : 1;
  if (lm_at < scores.size()) scores[lm_at] = out.format == LatticeFormat::Kaldi ? -rest : rest;
}

Lattice histories_lattice(const LatticeSearch& s, const Lattice& l, const Model* model,
                          const ScoreOptions& opt, const LatticeOutput& want) {
  std::vector<bool> on(s.tokens.size(), false);
  std::vector<int32_t> stack;
  for (const auto& c : s.completions)
    if (!on[size_t(c.token)]) {
      on[size_t(c.token)] = true;
      stack.push_back(c.token);
    }
  while (!stack.empty()) {
    const int32_t t = stack.back();
    stack.pop_back();
    for (const auto& e : s.tokens[size_t(t)].edges)
      if (e.prev >= 0 && !on[size_t(e.prev)]) {
        on[size_t(e.prev)] = true;
        stack.push_back(e.prev);
      }
  }
  Lattice out;
  out.format = l.format;
  out.source = l.source;
  out.key = l.key;
  out.line = l.line;
  out.score_names = l.score_names;
  if (out.format == LatticeFormat::Slf) {
    for (const auto& h : l.header)
      if (h.first != "lmscale" && h.first != "wdpenalty" && h.first != "acscale") out.header.push_back(h);
    const auto& names = l.score_names;
    const auto ac = size_t(std::find(names.begin(), names.end(), "acoustic") - names.begin());
    out.header.push_back({"lmscale", "1"});
    out.header.push_back({"wdpenalty", "0"});
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", ac < want.weights.size() ? want.weights[ac] : 0.0);
    out.header.push_back({"acscale", buf});
  }
  std::vector<int32_t> id(s.tokens.size(), -1);
  for (size_t t = 0; t < s.tokens.size(); ++t)
    if (on[t]) {
      id[t] = out.states++;
      if (!l.times.empty()) out.times.push_back(l.times[size_t(s.tokens[t].state)]);
    }
  out.start = 0;
  ScoreOptions o = opt;
  o.append_eos = false;
  for (size_t t = 0; t < s.tokens.size(); ++t) {
    if (!on[t]) continue;
    for (const auto& e : s.tokens[t].edges) {
      if (e.prev < 0 || !on[size_t(e.prev)]) continue;
      LatticeArc a = l.arcs[size_t(e.arc)];
      a.from = id[size_t(e.prev)];
      a.to = id[t];
      double lm = 0;
      for (float v : e.lp) lm += double(v);
      double words = a.epsilon ? 0 : 1;
      if (model && !a.epsilon)
        words = double(tokenize_line(*model, a.word, o, LineRef{l.source, a.line}).words.size());
      replace_lm(out, a.scores, want.weights, lm, words, want);
      out.arcs.push_back(std::move(a));
    }
  }
  for (const auto& c : s.completions) {
    LatticeFinal f = l.finals[size_t(c.final)];
    f.state = id[size_t(c.token)];
    double lm = 0;
    for (float v : c.lp) lm += double(v);
    replace_lm(out, f.scores, want.weights, lm, 0, want);
    out.finals.push_back(std::move(f));
  }
  return out;
}

}  // namespace

LatticeResult lattice_result(const LatticeSearch& s, const Lattice& l, const Model* model,
                             const ScoreOptions& opt, const LatticeOutput& want) {
  LatticeResult r;
  std::vector<size_t> by_total(s.completions.size());
  for (size_t i = 0; i < by_total.size(); ++i) by_total[i] = i;
  std::stable_sort(by_total.begin(), by_total.end(), [&](size_t a, size_t b) {
    const double x = s.completions[a].total, y = s.completions[b].total;
    return x > y || (std::isnan(y) && !std::isnan(x));
  });
  std::unordered_set<std::string> seen;
  std::vector<size_t> arcs;
  std::vector<float> lp;
  const bool first_is_context = model && start_token(model->tokenizer()) < 0;
  for (size_t i : by_total) {
    if (int64_t(r.nbest.size()) == want.n_best) break;
    const auto& c = s.completions[i];
    trace(s, c, arcs, lp);
    std::string text;
    for (size_t a : arcs)
      if (!l.arcs[a].epsilon) text += (text.empty() ? "" : " ") + l.arcs[a].word;
    if (!seen.insert(text).second) continue;
    LatticePath p;
    p.arcs = arcs;
    p.final = size_t(c.final);
    Hypothesis& h = p.hyp;
    h.utt = l.key;
    h.text = text;
    h.line = l.line;
    h.scores.assign(l.score_names.size(), {0.0});
    for (size_t k = 0; k < l.score_names.size(); ++k) {
      double v = 0;
      for (size_t a : arcs) v += l.arcs[a].scores[k];
      h.scores[k][0] = v + l.finals[p.final].scores[k];
    }
    // The numbers Rescorer gives this hypothesis (Rescorer::combine), from the same log-probs.
    HypothesisScore& sc = p.score;
    if (model) {
      sc.lm = tokenize_line(*model, text, opt, LineRef{l.source, l.line});
      const size_t fed = fed_ids(sc.lm).size();
      if (lp.size() != fed - (first_is_context && fed > 0 ? 1 : 0))
        throw InputError(l.source, l.line,
                         "lattice '" + l.key + "': the words of a path tokenize differently whole ('" +
                             printable(text, 100) + "') than arc by arc");
      fill_line(sc.lm, lp.data(), first_is_context);
      for (const auto& w : sc.lm.words) sc.words += w.eos ? 0 : 1;
    } else {
      for (size_t a : arcs) sc.words += l.arcs[a].epsilon ? 0 : 1;
    }
    sc.lm_logprob = sc.lm.logprob;
    sc.lm_forward = sc.lm_logprob;
    double comb = want.lm_weight * sc.lm_logprob + want.word_penalty * double(sc.words);
    for (size_t k = 0; k < want.weights.size() && k < h.scores.size(); ++k) {
      if (want.weights[k] == 0) continue;
      double v = 0;
      for (double x : h.scores[k]) v += x;
      comb += want.weights[k] * v;
    }
    sc.combined = comb;
    r.nbest.push_back(std::move(p));
  }
  std::stable_sort(r.nbest.begin(), r.nbest.end(), [](const LatticePath& a, const LatticePath& b) {
    return a.score.combined > b.score.combined ||
           (std::isnan(b.score.combined) && !std::isnan(a.score.combined));
  });
  for (size_t i = 0; i < r.nbest.size(); ++i) {
    r.nbest[i].hyp.n = int64_t(i + 1);
    r.nbest[i].hyp.id = l.key + "-" + std::to_string(i + 1);
  }
  if (!r.nbest.empty()) r.nbest[0].score.best = true;
  if (want.lattice) r.rescored = histories_lattice(s, l, model, opt, want);
  return r;
}

}  // namespace lstmlm::tasks::detail
