// Lattices written back: Kaldi CompactLattice text and SLF, with the scores converted between the forms.
#include <algorithm>
#include <charconv>

#include "lattice/parse.hpp"
#include "lstmlm/lattice.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm {

namespace {

// The shortest text that reads back as the same double (0 for -0).
std::string real_text(double v) {
  if (v == 0) return "0";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool needs_quotes(const std::string& s) {
  return s.empty() || s.find_first_of(" \t\"'\\=") != std::string::npos;
}

// Kaldi (graph, acoustic) costs from SLF (acoustic, lm[, pron]) log-probs, and back.
std::vector<double> to_kaldi(const std::vector<double>& slf) {
  double graph = -slf[1];
  if (slf.size() > 2) graph -= slf[2];
  return {graph, -slf[0]};
}
std::vector<double> to_slf(const std::vector<double>& kaldi) { return {-kaldi[1], -kaldi[0]}; }

}  // namespace

Lattice convert_lattice(const Lattice& l, LatticeFormat to) {
  if (l.format == to) return l;
  Lattice c = l;
  c.format = to;
  auto conv = to == LatticeFormat::Kaldi ? to_kaldi : to_slf;
  c.score_names = to == LatticeFormat::Kaldi ? std::vector<std::string>{"graph", "acoustic"}
                                             : std::vector<std::string>{"acoustic", "lm"};
  for (auto& a : c.arcs) a.scores = conv(a.scores);
  for (auto& f : c.finals) f.scores = conv(f.scores);
  if (to == LatticeFormat::Kaldi) c.header.clear();
  return c;
}

std::string write_kaldi_lattice(const Lattice& in, const SymbolTable& symbols) {
  const Lattice l = convert_lattice(in, LatticeFormat::Kaldi);
  std::string out = l.key + "\n";
  auto weight = [](const std::vector<double>& s, const std::string& tids) {
    return real_text(s[0]) + "," + real_text(s[1]) + "," + tids;
  };
  // The start state's lines first: Kaldi takes the first line's state as the start.
  std::vector<size_t> order(l.arcs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return l.arcs[i].from == l.start; });
  if (order.empty() || l.arcs[order[0]].from != l.start)
    for (const auto& f : l.finals)
      if (f.state == l.start) out += std::to_string(f.state) + " " + weight(f.scores, "") + "\n";
  for (size_t i : order) {
    const auto& a = l.arcs[i];
    int64_t id = 0;
    if (auto known = symbols.id(a.word)) {
      id = *known;
    } else if (!a.epsilon) {
      lattice::fail(l.source, a.line, l.key,
                    "the word '" + printable(a.word, 80) + "' is not in " + symbols.path() +
                        " (a Kaldi lattice has ids)");
    }
    out += std::to_string(a.from) + " " + std::to_string(a.to) + " " + std::to_string(id) + " " +
           weight(a.scores, a.extra) + "\n";
  }
  for (const auto& f : l.finals) {
    if (f.state == l.start && (order.empty() || l.arcs[order[0]].from != l.start)) continue;
    const bool one = f.scores[0] == 0 && f.scores[1] == 0;
    out += std::to_string(f.state) + (one ? "" : " " + weight(f.scores, "")) + "\n";
  }
  return out + "\n";
}

std::string write_slf_lattice(const Lattice& in) {
  const Lattice l = convert_lattice(in, LatticeFormat::Slf);
  // Final weights become !NULL links into an end node of their own, which the reader turns back into them.
  const int32_t end = l.states;
  std::string out = "VERSION=1.1\nUTTERANCE=" + quoted(l.key) + "\n";
  for (const auto& [name, value] : l.header)
    if (name != "V" && name != "base")
      out += name + "=" + (needs_quotes(value) ? quoted(value) : value) + "\n";
  out += "start=" + std::to_string(l.start) + " end=" + std::to_string(end) + "\n";
  out += "N=" + std::to_string(l.states + 1) + " L=" + std::to_string(l.arcs.size() + l.finals.size()) + "\n";
  for (int32_t s = 0; s <= end; ++s) {
    out += "I=" + std::to_string(s);
    if (!l.times.empty())
      out +=
          " t=" + real_text(s < end ? l.times[size_t(s)] : *std::max_element(l.times.begin(), l.times.end()));
    out += "\n";
  }
  size_t j = 0;
  auto link = [&](int32_t from, int32_t to, const std::string& word, const std::vector<double>& s) {
    out += "J=" + std::to_string(j++) + " S=" + std::to_string(from) + " E=" + std::to_string(to) +
           " W=" + (needs_quotes(word) ? quoted(word) : word) + " a=" + real_text(s[0]) +
           " l=" + real_text(s[1]);
    if (s.size() > 2) out += " r=" + real_text(s[2]);
    out += "\n";
  };
  for (const auto& a : l.arcs) link(a.from, a.to, a.word == "<eps>" ? "!NULL" : a.word, a.scores);
  for (const auto& f : l.finals) link(f.state, end, "!NULL", f.scores);
  return out;
}

}  // namespace lstmlm
