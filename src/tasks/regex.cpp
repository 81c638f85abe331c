// --regex: the pattern parsed by recursive descent into a tree, compiled back to front into a Thompson NFA
// (each piece knows what follows it), and determinised on demand (tasks/regex.hpp).
#include "tasks/regex.hpp"

#include <algorithm>
#include <string>

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::tasks::detail {

// Named, not anonymous: RegexCompiler (a friend of Dfa) holds the tree.
namespace regex_syntax {

constexpr int kMaxRepeat = 1000;
// Groups and quantifiers nested in one another at most: the parser and the compiler recurse once per level.
constexpr int kMaxNesting = 256;
constexpr int kUnbounded = -1;

struct Node {
  enum Kind { Empty, Bytes, Cat, Alt, Repeat } kind = Empty;
  std::bitset<256> bytes;
  std::vector<int> kids;
  int min = 0, max = 0;
};

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  std::vector<Node> nodes;

  int parse() {
    if (!p_.empty() && p_.front() == '^') ++at_;
    size_t end = p_.size();
    // A trailing unescaped '$' only restates that the whole text matches.
    if (end > at_ && p_[end - 1] == '$' && !escaped_at(end - 1)) p_.remove_suffix(1);
    int n = alt();
    if (at_ < p_.size()) fail(p_[at_] == ')' ? "')' without a '('" : "unexpected character");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError::option(
        "regex", ": " + why + " at offset " + std::to_string(at_) + " of \"" + printable(p_, 80) + "\"");
  }
  bool escaped_at(size_t i) const {
    size_t n = 0;
    while (i > n && p_[i - 1 - n] == '\\') ++n;
    return n % 2 == 1;
  }
  bool more() const { return at_ < p_.size(); }
  char peek() const { return p_[at_]; }
  int make(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }
  int set_node(const std::bitset<256>& b) {
    Node n;
    n.kind = Node::Bytes;
    n.bytes = b;
    return make(std::move(n));
  }

  int alt() {
    std::vector<int> kids{cat()};
    while (more() && peek() == '|') {
      ++at_;
      kids.push_back(cat());
    }
    if (kids.size() == 1) return kids[0];
    Node n;
    n.kind = Node::Alt;
    n.kids = std::move(kids);
    return make(std::move(n));
  }

  int cat() {
    std::vector<int> kids;
    while (more() && peek() != '|' && peek() != ')') kids.push_back(repeat());
    if (kids.empty()) return make(Node{});
    if (kids.size() == 1) return kids[0];
    Node n;
    n.kind = Node::Cat;
    n.kids = std::move(kids);
    return make(std::move(n));
  }

  bool number(int& v) {
    size_t start = at_;
    v = 0;
    while (more() && peek() >= '0' && peek() <= '9') {
      v = std::min(v * 10 + (peek() - '0'), kMaxRepeat + 1);
      ++at_;
    }
    return at_ > start;
  }

  int repeat() {
    int n = atom();
    for (int stacked = 0; more(); ++stacked) {
      if (depth_ + stacked > kMaxNesting)
        fail("groups and quantifiers nested more than " + std::to_string(kMaxNesting) + " deep");
      int lo = 0, hi = 0;
      const char c = peek();
      if (c == '*') {
        lo = 0, hi = kUnbounded;
      } else if (c == '+') {
        lo = 1, hi = kUnbounded;
      } else if (c == '?') {
        lo = 0, hi = 1;
      } else if (c == '{') {
        ++at_;
        if (!number(lo)) fail("'{' needs a count: {m}, {m,} or {m,n}");
        hi = lo;
        if (more() && peek() == ',') {
          ++at_;
          if (!number(hi)) hi = kUnbounded;
        }
        if (!more() || peek() != '}') fail("a count {m,n} ends with '}'");
        if (lo > kMaxRepeat || hi > kMaxRepeat) fail("a count is at most " + std::to_string(kMaxRepeat));
        if (hi != kUnbounded && hi < lo) fail("{m,n} needs m <= n");
      } else {
        break;
      }
      ++at_;
      Node r;
      r.kind = Node::Repeat;
      r.kids = {n};
      r.min = lo;
      r.max = hi;
      n = make(std::move(r));
    }
    return n;
  }

  // One escaped character class or byte after a backslash (the backslash consumed).
  std::bitset<256> escape() {
    if (!more()) fail("a pattern cannot end with '\\'");
    const char c = p_[at_++];
    std::bitset<256> b;
    auto range = [&](int lo, int hi) {
      for (int i = lo; i <= hi; ++i) b.set(static_cast<size_t>(i));
    };
    switch (c) {
      case 'n':
        b.set('\n');
        return b;
      case 't':
        b.set('\t');
        return b;
      case 'r':
        b.set('\r');
        return b;
      case 'f':
        b.set('\f');
        return b;
      case 'v':
        b.set('\v');
        return b;
      case 'd':
      case 'D':
        range('0', '9');
        break;
      case 'w':
      case 'W':
        range('0', '9'), range('a', 'z'), range('A', 'Z'), b.set('_');
        break;
      case 's':
      case 'S':
        b.set(' '), b.set('\t'), b.set('\n'), b.set('\r'), b.set('\f'), b.set('\v');
        break;
      case 'x': {
        auto hex = [&](char h) {
          if (h >= '0' && h <= '9') return h - '0';
          if (h >= 'a' && h <= 'f') return h - 'a' + 10;
          if (h >= 'A' && h <= 'F') return h - 'A' + 10;
          return -1;
        };
        if (at_ + 2 > p_.size() || hex(p_[at_]) < 0 || hex(p_[at_ + 1]) < 0) fail("\\x needs two hex digits");
        b.set(static_cast<size_t>(hex(p_[at_]) * 16 + hex(p_[at_ + 1])));
        at_ += 2;
        return b;
      }
      default:
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
          fail(std::string("unknown escape '\\") + c + "'");
        b.set(static_cast<unsigned char>(c));
        return b;
    }
    if (c >= 'A' && c <= 'Z') b.flip();
    return b;
  }

  std::bitset<256> char_class() {  // after '['
    std::bitset<256> b;
    bool negate = false;
    if (more() && peek() == '^') {
      negate = true;
      ++at_;
    }
    bool first = true;
    while (more() && (peek() != ']' || first)) {
      first = false;
      int lo;
      if (peek() == '\\') {
        ++at_;
        auto e = escape();
        if (e.count() != 1) {  // \d, \w, \s inside a class
          b |= e;
          continue;
        }
        lo = 0;
        while (!e.test(static_cast<size_t>(lo))) ++lo;
      } else {
        lo = static_cast<unsigned char>(p_[at_++]);
      }
      int hi = lo;
      if (at_ + 1 < p_.size() && peek() == '-' && p_[at_ + 1] != ']') {
        ++at_;
        if (peek() == '\\') {
          ++at_;
          auto e = escape();
          if (e.count() != 1) fail("a range ends with one character");
          hi = 0;
          while (!e.test(static_cast<size_t>(hi))) ++hi;
        } else {
          hi = static_cast<unsigned char>(p_[at_++]);
        }
        if (hi < lo) fail("a range [a-z] goes up");
      }
      for (int i = lo; i <= hi; ++i) b.set(static_cast<size_t>(i));
    }
    if (!more()) fail("'[' without a ']'");
    ++at_;
    if (negate) b.flip();
    if (b.none()) fail("the class matches no character");
    return b;
  }

  int atom() {
    const char c = p_[at_++];
    switch (c) {
      case '(': {
        if (p_.substr(at_, 2) == "?:") at_ += 2;
        if (++depth_ > kMaxNesting) fail("groups nested more than " + std::to_string(kMaxNesting) + " deep");
        int n = alt();
        --depth_;
        if (!more() || peek() != ')') fail("'(' without a ')'");
        ++at_;
        return n;
      }
      case '[':
        return set_node(char_class());
      case '.': {
        std::bitset<256> b;
        b.set();
        b.reset('\n');
        return set_node(b);
      }
      case '\\':
        return set_node(escape());
      case '*':
      case '+':
      case '?':
      case '{':
        --at_;
        fail("a quantifier needs something before it");
      case '^':
      case '$':
        --at_;
        fail("anchors only at the ends (the whole text matches anyway)");
      default: {
        std::bitset<256> b;
        b.set(static_cast<unsigned char>(c));
        return set_node(b);
      }
    }
  }

  std::string_view p_;
  size_t at_ = 0;
  int depth_ = 0;
};

}  // namespace regex_syntax

using regex_syntax::kUnbounded;
using regex_syntax::Node;

class RegexCompiler {
 public:
  RegexCompiler(Dfa& d, const std::vector<Node>& nodes) : d_(d), nodes_(nodes) {}

  int32_t add(Dfa::NState s) {
    if (d_.nfa_.size() >= kMaxNfaStates)
      throw UsageError::option("regex", ": the pattern is too large (more than " +
                                            std::to_string(kMaxNfaStates) +
                                            " automaton states once its counts are expanded)");
    d_.nfa_.push_back(s);
    return static_cast<int32_t>(d_.nfa_.size()) - 1;
  }

  // The start of node `n` followed by the state `next`.
  int32_t compile(int n, int32_t next) {
    const Node& node = nodes_[static_cast<size_t>(n)];
    switch (node.kind) {
      case Node::Empty:
        return next;
      case Node::Bytes: {
        d_.bytes_.push_back(node.bytes);
        return add({Dfa::NState::Byte, next, -1, static_cast<int32_t>(d_.bytes_.size()) - 1});
      }
      case Node::Cat:
        for (size_t i = node.kids.size(); i-- > 0;) next = compile(node.kids[i], next);
        return next;
      case Node::Alt: {
        int32_t s = compile(node.kids.back(), next);
        for (size_t i = node.kids.size() - 1; i-- > 0;) {
          const int32_t a = compile(node.kids[i], next);
          s = add({Dfa::NState::Split, a, s, -1});
        }
        return s;
      }
      case Node::Repeat: {
        const int kid = node.kids[0];
        int32_t start = next;
        if (node.max == kUnbounded) {
          const int32_t loop = add({Dfa::NState::Split, -1, next, -1});
          const int32_t body = compile(kid, loop);
          d_.nfa_[static_cast<size_t>(loop)].out = body;
          start = loop;
        } else {
          // x{0,k}: k nested options, each either x then the next option, or straight on.
          for (int i = 0; i < node.max - node.min; ++i) {
            const int32_t body = compile(kid, start);
            start = add({Dfa::NState::Split, body, next, -1});
          }
        }
        for (int i = 0; i < node.min; ++i) start = compile(kid, start);
        return start;
      }
    }
    return next;
  }

 private:
  Dfa& d_;
  const std::vector<Node>& nodes_;
};

Dfa::Dfa(std::string_view pattern) {
  regex_syntax::Parser parser(pattern);
  const int root = parser.parse();
  RegexCompiler c(*this, parser.nodes);
  const int32_t match = c.add({NState::Match, -1, -1, -1});
  nfa_start_ = c.compile(root, match);
  mark_.assign(nfa_.size(), 0);
  std::vector<int32_t> set;
  closure(nfa_start_, set);
  std::sort(set.begin(), set.end());
  add_state(std::move(set));
}

void Dfa::closure(int32_t s, std::vector<int32_t>& out) {
  // Called with one generation per DFA transition: a state reached twice is added once.
  std::vector<int32_t> stack{s};
  while (!stack.empty()) {
    const int32_t x = stack.back();
    stack.pop_back();
    if (x < 0 || mark_[static_cast<size_t>(x)] == generation_ + 1) continue;
    mark_[static_cast<size_t>(x)] = generation_ + 1;
    const NState& n = nfa_[static_cast<size_t>(x)];
    if (n.kind == NState::Split) {
      stack.push_back(n.out2);
      stack.push_back(n.out);
    } else {
      out.push_back(x);
    }
  }
}

int32_t Dfa::add_state(std::vector<int32_t> set) {
  if (set.empty()) return -1;
  auto it = index_.find(set);
  if (it != index_.end()) return it->second;
  if (sets_.size() >= kMaxDfaStates)
    throw UsageError::option(
        "regex", ": the pattern needs more than " + std::to_string(kMaxDfaStates) + " automaton states");
  const auto id = static_cast<int32_t>(sets_.size());
  bool acc = false;
  for (int32_t x : set) acc = acc || nfa_[static_cast<size_t>(x)].kind == NState::Match;
  index_.emplace(set, id);
  sets_.push_back(std::move(set));
  std::array<int32_t, 256> t;
  t.fill(-2);
  trans_.push_back(t);
  accepting_.push_back(acc);
  return id;
}

int32_t Dfa::step(int32_t s, unsigned char c) {
  int32_t& t = trans_[static_cast<size_t>(s)][c];
  if (t != -2) return t;
  ++generation_;
  std::vector<int32_t> next;
  for (int32_t x : sets_[static_cast<size_t>(s)]) {
    const NState& n = nfa_[static_cast<size_t>(x)];
    if (n.kind == NState::Byte && bytes_[static_cast<size_t>(n.set)].test(c)) closure(n.out, next);
  }
  std::sort(next.begin(), next.end());
  const int32_t id = add_state(std::move(next));  // may reallocate trans_: `t` is not used after this
  trans_[static_cast<size_t>(s)][c] = id;
  return id;
}

bool Dfa::matches(std::string_view text) {
  int32_t s = start();
  for (char ch : text) {
    s = step(s, static_cast<unsigned char>(ch));
    if (s < 0) return false;
  }
  return accepting(s);
}

}  // namespace lstmlm::tasks::detail
