// Kaldi lattices in text form, as `lattice-copy ark:- ark,t:-` writes them: a key line, then one arc or
// final state per line, a blank line at the end. CompactLattice (the default): "SRC DST WORD G,A,TIDS" and
// "STATE G,A,TIDS"; Lattice: "SRC DST TID WORD G,A" and "STATE G,A"; a weight left out is One (cost 0).
#include <algorithm>

#include "lattice/lines.hpp"
#include "lattice/parse.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::lattice {

namespace {

struct KaldiLine {
  Lines& in;
  Lattice& l;
  [[noreturn]] void bad(const std::string& what) const { fail(in.path(), in.number(), l.key, what); }

  int32_t state(std::string_view s) const {
    int64_t v = 0;
    if (!parse_index(s, kMaxLatticeStates, v))
      bad("state '" + printable(s, 40) + "' is not a state number in [0, " +
          std::to_string(kMaxLatticeStates) + ")");
    return int32_t(v);
  }

  // "G,A" or "G,A,TIDS": costs, and the transition ids kept as written.
  void weight(std::string_view s, std::vector<double>& scores, std::string* tids) const {
    const size_t c1 = s.find(',');
    const size_t c2 = c1 == std::string_view::npos ? c1 : s.find(',', c1 + 1);
    if (c1 == std::string_view::npos)
      bad("weight '" + printable(s, 60) + "' is not 'GRAPH,ACOUSTIC[,TRANSITION-IDS]'");
    const std::string_view g = s.substr(0, c1);
    const std::string_view a =
        s.substr(c1 + 1, c2 == std::string_view::npos ? std::string_view::npos : c2 - c1 - 1);
    scores.assign(2, 0.0);
    if (!parse_real(g, scores[0])) bad("graph cost '" + printable(g, 40) + "' is not a finite number");
    if (!parse_real(a, scores[1])) bad("acoustic cost '" + printable(a, 40) + "' is not a finite number");
    if (c2 != std::string_view::npos) {
      const std::string_view t = s.substr(c2 + 1);
      if (t.find_first_not_of("0123456789_") != std::string_view::npos)
        bad("transition ids '" + printable(t, 40) + "' are not numbers joined by '_'");
      if (tids) *tids = std::string(t);
    }
  }

  void word(std::string_view s, const SymbolTable* symbols, LatticeArc& a) const {
    int64_t id = 0;
    if (!parse_index(s, int64_t{1} << 31, id)) bad("word id '" + printable(s, 40) + "' is not a number");
    if (id == 0) {
      a.epsilon = true;
      a.word = "<eps>";
      return;
    }
    if (!symbols)
      bad("word id " + std::to_string(id) + ": a Kaldi lattice needs its symbol table (words.txt)");
    const std::string* w = symbols->word(id);
    if (!w)
      bad("word id " + std::to_string(id) + " is not in " + symbols->path() +
          (id >= symbols->size() ? " (its ids end at " + std::to_string(symbols->size() - 1) + ")" : ""));
    a.word = *w;
    a.epsilon = *w == "<s>" || *w == "</s>" || *w == "<eps>";
  }
};

}  // namespace

bool read_kaldi(Lines& in, const SymbolTable* symbols, int64_t max_arcs, Lattice& out) {
  std::string_view line;
  do {
    if (!in.next(line)) return false;
  } while (trim_blanks(line).empty());
  out = Lattice{};
  out.format = LatticeFormat::Kaldi;
  out.source = in.path();
  out.line = in.number();
  out.key = std::string(trim_blanks(line));
  out.score_names = {"graph", "acoustic"};
  KaldiLine k{in, out};
  int32_t top = -1;
  bool first = true;
  std::vector<uint64_t> final_line;
  while (in.next(line)) {
    const auto f = split_blanks(line);
    if (f.empty()) break;
    LatticeArc a;
    a.line = in.number();
    const int32_t src = k.state(f[0]);
    if (first) out.start = src;
    first = false;
    top = std::max(top, src);
    if (f.size() <= 2) {
      LatticeFinal fin{src, {0.0, 0.0}, in.number()};
      if (f.size() == 2) k.weight(f[1], fin.scores, nullptr);
      if (std::any_of(out.finals.begin(), out.finals.end(),
                      [&](const LatticeFinal& x) { return x.state == src; }))
        k.bad("state " + std::to_string(src) + " is given a final weight twice");
      out.finals.push_back(std::move(fin));
      continue;
    }
    a.from = src;
    a.to = k.state(f[1]);
    top = std::max(top, a.to);
    a.scores.assign(2, 0.0);
    const bool compact = f.size() == 3 || (f.size() == 4 && f[3].find(',') != std::string_view::npos);
    if (compact) {
      k.word(f[2], symbols, a);
      if (f.size() == 4) k.weight(f[3], a.scores, &a.extra);
    } else if (f.size() == 4 || f.size() == 5) {
      int64_t tid = 0;
      if (!parse_index(f[2], int64_t{1} << 31, tid))
        k.bad("transition id '" + printable(f[2], 40) + "' is not a number");
      if (tid != 0) a.extra = std::string(f[2]);
      k.word(f[3], symbols, a);
      if (f.size() == 5) k.weight(f[4], a.scores, nullptr);
    } else {
      k.bad(
          "expected an arc 'SRC DST WORD GRAPH,ACOUSTIC,TIDS' (or 'SRC DST TID WORD GRAPH,ACOUSTIC') or a "
          "final "
          "state 'STATE [WEIGHT]', got '" +
          printable(line, 80) + "'");
    }
    if (int64_t(out.arcs.size()) >= max_arcs)
      k.bad("more than " + std::to_string(max_arcs) +
            " arcs in one lattice (the bound of one lattice's memory)");
    out.arcs.push_back(std::move(a));
  }
  if (first)
    fail(in.path(), out.line, out.key, "no arcs and no final state after the key (an empty lattice)");
  out.states = top + 1;
  return true;
}

}  // namespace lstmlm::lattice
