// A lattice's shape: acyclic, every state on a path from the start to a final state.
#include <algorithm>
#include <cstdint>

#include "lattice/parse.hpp"
#include "lstmlm/lattice.hpp"

namespace lstmlm {

namespace {

// A cycle among the states Kahn's algorithm left (each is on a cycle or after one): "3 -> 5 -> 3".
std::string find_cycle(const Lattice& l, const std::vector<std::vector<size_t>>& out,
                       const std::vector<int32_t>& indegree, uint64_t& line) {
  std::vector<int8_t> color(size_t(l.states), 0);  // 0 new, 1 on the path, 2 done
  for (int32_t root = 0; root < l.states; ++root) {
    if (indegree[size_t(root)] == 0 || color[size_t(root)]) continue;
    std::vector<std::pair<int32_t, size_t>> stack{{root, 0}};  // state, next arc of it to follow
    color[size_t(root)] = 1;
    while (!stack.empty()) {
      auto& [s, next] = stack.back();
      if (next == out[size_t(s)].size()) {
        color[size_t(s)] = 2;
        stack.pop_back();
        continue;
      }
      const size_t arc = out[size_t(s)][next++];
      const int32_t t = l.arcs[arc].to;
      if (color[size_t(t)] == 1) {
        size_t k = 0;
        while (stack[k].first != t) ++k;
        std::string text;
        for (size_t i = k; i < stack.size(); ++i) text += std::to_string(stack[i].first) + " -> ";
        line = l.arcs[arc].line;
        return text + std::to_string(t);
      }
      if (color[size_t(t)] == 0) {
        color[size_t(t)] = 1;
        stack.push_back({t, 0});
      }
    }
  }
  return "?";
}

}  // namespace

std::vector<int32_t> check_lattice(const Lattice& l) {
  auto bad = [&](uint64_t line, const std::string& what) { lattice::fail(l.source, line, l.key, what); };
  if (l.finals.empty()) bad(l.line, "no final state");
  // Every state but the start is entered by an arc: more states than arcs + 1 leaves one unused. Found
  // before anything is sized by the state count, which a single line can make large.
  if (int64_t(l.states) > int64_t(l.arcs.size()) + 1) {
    std::vector<bool> used(size_t(l.states), false);
    used[size_t(l.start)] = true;
    for (const auto& a : l.arcs) used[size_t(a.from)] = used[size_t(a.to)] = true;
    for (const auto& f : l.finals) used[size_t(f.state)] = true;
    for (int32_t s = 0; s < l.states; ++s)
      if (!used[size_t(s)])
        bad(l.line, "state " + std::to_string(s) + " is never reached from the start state " +
                        std::to_string(l.start) + " (no arc uses it)");
  }
  const size_t n = size_t(l.states);
  std::vector<std::vector<size_t>> out(n), in(n);
  for (size_t i = 0; i < l.arcs.size(); ++i) {
    out[size_t(l.arcs[i].from)].push_back(i);
    in[size_t(l.arcs[i].to)].push_back(i);
  }
  std::vector<int32_t> indegree(n);
  for (size_t s = 0; s < n; ++s) indegree[s] = int32_t(in[s].size());
  std::vector<int32_t> order;
  order.reserve(n);
  for (size_t s = 0; s < n; ++s)
    if (indegree[s] == 0) order.push_back(int32_t(s));
  for (size_t k = 0; k < order.size(); ++k)
    for (size_t arc : out[size_t(order[k])])
      if (--indegree[size_t(l.arcs[arc].to)] == 0) order.push_back(l.arcs[arc].to);
  if (order.size() != n) {
    uint64_t line = l.line;
    const std::string cycle = find_cycle(l, out, indegree, line);
    bad(line, "a cycle: " + cycle + " (a lattice is acyclic)");
  }
  std::vector<bool> reached(n, false), finishes(n, false);
  reached[size_t(l.start)] = true;
  for (int32_t s : order)
    if (reached[size_t(s)])
      for (size_t arc : out[size_t(s)]) reached[size_t(l.arcs[arc].to)] = true;
  for (const auto& f : l.finals) finishes[size_t(f.state)] = true;
  for (size_t k = n; k-- > 0;) {
    const int32_t s = order[k];
    for (size_t arc : out[size_t(s)])
      if (finishes[size_t(l.arcs[arc].to)]) finishes[size_t(s)] = true;
  }
  for (size_t s = 0; s < n; ++s) {
    // The first line that names the state.
    uint64_t line = out[s].empty() && in[s].empty() ? l.line : UINT64_MAX;
    if (!out[s].empty()) line = l.arcs[out[s][0]].line;
    if (!in[s].empty()) line = std::min(line, l.arcs[in[s][0]].line);
    if (!reached[s])
      bad(line, "state " + std::to_string(s) + " is never reached from the start state " +
                    std::to_string(l.start) + (in[s].empty() && out[s].empty() ? " (no arc uses it)" : ""));
    if (!finishes[s])
      bad(line, "state " + std::to_string(s) + " reaches no final state (not all states are co-accessible)");
  }
  return order;
}

}  // namespace lstmlm
