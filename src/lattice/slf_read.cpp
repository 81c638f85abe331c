// HTK Standard Lattice Format: a header of NAME=VALUE fields (VERSION, UTTERANCE, base, lmscale, N, L,
// start, end, ...), then N node lines "I=.. t=.. W=.." and L link lines "J=.. S=.. E=.. W=.. a=.. l=..", in
// any order, with '#' comments. Values may be quoted ("..." or '...') with backslash escapes. Words on
// nodes go to the links entering them; scores are turned from base= into natural logs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "lattice/lines.hpp"
#include "lattice/parse.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::lattice {

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// The long names HTK allows beside the short ones.
std::string short_name(const std::string& n) {
  static const std::map<std::string, std::string> kLong = {
      {"VERSION", "V"}, {"UTTERANCE", "U"}, {"NODES", "N"},    {"LINKS", "L"},
      {"time", "t"},    {"WORD", "W"},      {"var", "v"},      {"START", "S"},
      {"END", "E"},     {"acoustic", "a"},  {"language", "l"}, {"div", "d"}};
  auto it = kLong.find(n);
  return it == kLong.end() ? n : it->second;
}

struct SlfLine {
  Lines& in;
  Lattice& l;
  [[noreturn]] void bad(const std::string& what) const { fail(in.path(), in.number(), l.key, what); }

  Fields fields(std::string_view s) const {
    Fields out;
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
      if (i == s.size()) break;
      const size_t start = i;
      while (i < s.size() && s[i] != '=' && s[i] != ' ' && s[i] != '\t') ++i;
      if (i == s.size() || s[i] != '=' || i == start)
        bad("expected NAME=VALUE, got '" + printable(s.substr(start, i - start + 1), 60) + "'");
      std::string name = short_name(std::string(s.substr(start, i - start)));
      ++i;
      std::string value;
      if (i < s.size() && (s[i] == '"' || s[i] == '\'')) {
        const char q = s[i++];
        bool closed = false;
        while (i < s.size()) {
          char c = s[i++];
          if (c == q) {
            closed = true;
            break;
          }
          if (c == '\\' && i < s.size()) {
            if (i + 2 < s.size() && s[i] >= '0' && s[i] <= '7' && s[i + 1] >= '0' && s[i + 1] <= '7' &&
                s[i + 2] >= '0' && s[i + 2] <= '7') {
              c = char((s[i] - '0') * 64 + (s[i + 1] - '0') * 8 + (s[i + 2] - '0'));
              i += 3;
            } else {
              c = s[i++];
            }
          }
          value += c;
        }
        if (!closed) bad("the value of " + name + "= has no closing quote");
      } else {
        while (i < s.size() && s[i] != ' ' && s[i] != '\t') value += s[i++];
      }
      out.emplace_back(std::move(name), std::move(value));
    }
    return out;
  }

  int64_t index(const std::string& name, const std::string& v, int64_t limit) const {
    int64_t x = 0;
    if (!parse_index(v, limit, x))
      bad(name + "=" + printable(v, 40) + " is not a number in [0, " + std::to_string(limit) + ")");
    return x;
  }
  double real(const std::string& name, const std::string& v) const {
    double x = 0;
    if (!parse_real(v, x)) bad(name + "=" + printable(v, 40) + " is not a finite number");
    return x;
  }
};

struct Node {
  bool seen = false;
  std::string word;
  bool has_word = false;
  double time = -1;
  uint64_t line = 0;
};

bool epsilon_word(const std::string& w) {
  return w.empty() || w == "!NULL" || w == "!ENTER" || w == "!EXIT" || w == "<s>" || w == "</s>";
}

// Links without a word into the end node become final weights of their sources (as Kaldi keeps them), and
// the end node goes, when nothing else uses it: a Kaldi lattice written as SLF reads back as it was.
void finals_from_end(Lattice& l, int32_t end) {
  std::vector<size_t> into;
  std::vector<bool> from(size_t(l.states), false);
  for (size_t i = 0; i < l.arcs.size(); ++i) {
    const auto& a = l.arcs[i];
    if (a.from == end) return;
    if (a.to != end) continue;
    if (!a.epsilon || a.from == end || from[size_t(a.from)]) return;
    from[size_t(a.from)] = true;
    into.push_back(i);
  }
  if (into.empty() || end == l.start) return;
  for (size_t i : into) l.finals.push_back({l.arcs[i].from, l.arcs[i].scores, l.arcs[i].line});
  std::vector<LatticeArc> kept;
  kept.reserve(l.arcs.size() - into.size());
  for (auto& a : l.arcs)
    if (a.to != end) kept.push_back(std::move(a));
  l.arcs = std::move(kept);
  auto renumber = [end](int32_t& s) {
    if (s > end) --s;
  };
  for (auto& a : l.arcs) {
    renumber(a.from);
    renumber(a.to);
  }
  for (auto& f : l.finals) renumber(f.state);
  renumber(l.start);
  if (!l.times.empty()) l.times.erase(l.times.begin() + end);
  --l.states;
}

}  // namespace

bool read_slf(Lines& in, int64_t max_arcs, Lattice& out) {
  std::string_view line;
  auto content = [&](std::string_view s) {
    const auto t = trim_blanks(s);
    return !t.empty() && t[0] != '#';
  };
  do {
    if (!in.next(line)) return false;
  } while (!content(line));
  out = Lattice{};
  out.format = LatticeFormat::Slf;
  out.source = in.path();
  out.line = in.number();
  SlfLine p{in, out};
  int64_t nodes = -1, links = -1, start = -1, end = -1;
  double log_base = 1.0;  // ln(base): a value times this is a natural log
  bool linear = false;    // base=0: probabilities, not logs
  uint64_t count_line = 0;
  // The header: every line before the first node or link line.
  for (;;) {
    const Fields f = p.fields(line);
    if (!f.empty() && (f[0].first == "I" || f[0].first == "J")) {
      if (in.number() == out.line)
        p.bad("a node or link line where a lattice's header starts (more lines than the N= and L= before?)");
      break;
    }
    for (const auto& [name, value] : f) {
      if (name == "U") {
        out.key = value;
      } else if (name == "N") {
        nodes = p.index("N", value, kMaxLatticeStates);
        count_line = in.number();
      } else if (name == "L") {
        links = p.index("L", value, int64_t{1} << 40);
        if (links > max_arcs)
          p.bad("L=" + value + ": more than " + std::to_string(max_arcs) +
                " links in one lattice (the bound of one lattice's memory)");
        count_line = in.number();
      } else if (name == "start") {
        start = p.index("start", value, kMaxLatticeStates);
      } else if (name == "end") {
        end = p.index("end", value, kMaxLatticeStates);
      } else if (name == "base") {
        const double b = p.real("base", value);
        if (b < 0 || b == 1)
          p.bad("base=" + value + ": a log base is above 0 and not 1 (0: scores are not logs)");
        linear = b == 0;
        log_base = linear ? 1.0 : std::log(b);
        out.header.emplace_back(name, value);
      } else {
        out.header.emplace_back(name, value);
      }
    }
    do {
      if (!in.next(line))
        fail(in.path(), out.line, out.key,
             "the header is not followed by node and link lines (no I= or J= line)");
    } while (!content(line));
  }
  if (nodes < 0 || links < 0)
    p.bad("the header has no " + std::string(nodes < 0 ? "N=" : "L=") + " (the number of " +
          (nodes < 0 ? "nodes" : "links") + ") before the first node or link");
  out.states = int32_t(nodes);
  out.score_names = {"acoustic", "lm"};
  // N= is only a claim until its lines are there: the nodes are held by id as they come.
  std::unordered_map<int64_t, Node> node;
  std::vector<bool> link_seen(static_cast<size_t>(links), false);
  std::vector<bool> link_has_word;
  bool pron = false;
  int64_t nodes_read = 0, links_read = 0;
  out.arcs.reserve(size_t(std::min<int64_t>(links, 1 << 16)));
  std::vector<int64_t> link_id;
  auto score = [&](const std::string& name, const std::string& v) {
    const double x = p.real(name, v);
    if (!linear) return x * log_base;
    if (x <= 0) p.bad(name + "=" + v + ": with base=0 a score is a probability above 0");
    return std::log(x);
  };
  for (bool more = true; more;) {
    const Fields f = p.fields(line);
    if (f.empty() || (f[0].first != "I" && f[0].first != "J"))
      p.bad("expected a node (I=) or link (J=) line, got '" + printable(line, 60) + "'");
    if (f[0].first == "I") {
      const int64_t i = p.index("I", f[0].second, kMaxLatticeStates);
      if (i >= nodes)
        p.bad("node I=" + f[0].second + " is past N=" + std::to_string(nodes) + " (nodes are 0 to N-1)");
      Node& n = node[i];
      if (n.seen) p.bad("node I=" + f[0].second + " is given twice");
      n.seen = true;
      n.line = in.number();
      for (size_t k = 1; k < f.size(); ++k) {
        if (f[k].first == "W") {
          n.word = f[k].second;
          n.has_word = true;
        } else if (f[k].first == "t") {
          n.time = p.real("t", f[k].second);
        }
      }
      ++nodes_read;
    } else {
      const int64_t j = p.index("J", f[0].second, int64_t{1} << 40);
      if (j >= links)
        p.bad("link J=" + f[0].second + " is past L=" + std::to_string(links) + " (links are 0 to L-1)");
      if (link_seen[size_t(j)]) p.bad("link J=" + f[0].second + " is given twice");
      link_seen[size_t(j)] = true;
      LatticeArc a;
      a.line = in.number();
      a.from = a.to = -1;
      a.scores.assign(3, 0.0);
      bool has_word = false;
      for (size_t k = 1; k < f.size(); ++k) {
        const auto& [name, value] = f[k];
        if (name == "S" || name == "E") {
          const int64_t s = p.index(name, value, kMaxLatticeStates);
          if (s >= nodes)
            p.bad("link J=" + f[0].second + ": " + name + "=" + value +
                  " is past N=" + std::to_string(nodes));
          (name == "S" ? a.from : a.to) = int32_t(s);
        } else if (name == "W") {
          a.word = value;
          has_word = true;
        } else if (name == "a") {
          a.scores[0] = score("a", value);
        } else if (name == "l") {
          a.scores[1] = score("l", value);
        } else if (name == "r") {
          a.scores[2] = score("r", value);
          pron = true;
        }
      }
      if (a.from < 0 || a.to < 0) p.bad("link J=" + f[0].second + " has no " + (a.from < 0 ? "S=" : "E="));
      out.arcs.push_back(std::move(a));
      link_has_word.push_back(has_word);
      ++links_read;
    }
    more = nodes_read < nodes || links_read < links;
    if (!more) break;
    bool got = false;
    while ((got = in.next(line)) && !content(line)) {
    }
    if (!got)
      fail(in.path(), count_line, out.key,
           "N=" + std::to_string(nodes) + " L=" + std::to_string(links) + " but the file ends after " +
               std::to_string(nodes_read) + " node and " + std::to_string(links_read) + " link lines");
  }
  std::vector<bool> entered(size_t(nodes), false), left(size_t(nodes), false);
  for (size_t k = 0; k < out.arcs.size(); ++k) {
    auto& a = out.arcs[k];
    const Node& end_node = node[a.to];
    if (!link_has_word[k] && end_node.has_word) a.word = end_node.word;
    a.epsilon = epsilon_word(a.word);
    if (a.word.empty()) a.word = "!NULL";
    if (!pron) a.scores.resize(2);
    entered[size_t(a.to)] = true;
    left[size_t(a.from)] = true;
  }
  if (pron) out.score_names.push_back("pron");
  auto only = [&](const std::vector<bool>& has, const char* field, const char* what) {
    int64_t found = -1;
    for (int64_t i = 0; i < nodes; ++i)
      if (!has[size_t(i)]) {
        if (found >= 0)
          fail(in.path(), out.line, out.key,
               "nodes " + std::to_string(found) + " and " + std::to_string(i) + " both have no " + what +
                   " link: give " + field + "= in the header");
        found = i;
      }
    if (found < 0)
      fail(in.path(), out.line, out.key,
           std::string("every node has an ") + what + " link: give " + field + "= in the header");
    return found;
  };
  for (auto [name, v] : {std::pair<const char*, int64_t>{"start", start}, {"end", end}})
    if (v >= nodes)
      fail(in.path(), out.line, out.key,
           std::string(name) + "=" + std::to_string(v) + " is past N=" + std::to_string(nodes));
  out.start = int32_t(start >= 0 ? start : only(entered, "start", "entering"));
  const int32_t last = int32_t(end >= 0 ? end : only(left, "end", "leaving"));
  bool timed = nodes > 0;
  for (const auto& [id, n] : node) timed = timed && n.time >= 0;
  if (timed)
    for (int64_t i = 0; i < nodes; ++i) out.times.push_back(node[i].time);
  finals_from_end(out, last);
  if (out.finals.empty())
    out.finals.push_back({last, std::vector<double>(out.score_names.size(), 0.0), node[last].line});
  return true;
}

}  // namespace lstmlm::lattice
