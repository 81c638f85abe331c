// The prefix tree of PrefixScorer. A line is a path of steps (input fed, target scored); two lines share
// a node while their steps agree. The tree is cut into rows at branch points: a row starts from a known
// state (the start's, or a branch point's), runs its chain of steps to the next branch point or leaf, and
// its final state starts the rows below. Rows are run batch_size at a time, first in, first out.
#include <algorithm>
#include <deque>
#include <unordered_map>

#include "lstmlm/tasks/rescore.hpp"
#include "tasks/score_lines.hpp"

namespace lstmlm::tasks {

namespace {

struct Node {
  int32_t in = -1, target = -1;  // the step into this node (none at the root)
  std::vector<int32_t> kids;
  float lp = 0;       // ln p(target | path), once run
  int32_t slot = -1;  // index into the kept states while this node's rows wait
};

struct Key {
  int32_t parent, in, target;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = uint64_t(uint32_t(k.parent)) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t(uint32_t(k.in)) << 32 | uint32_t(k.target)) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    return size_t(h);
  }
};

class Tree {
 public:
  Tree() : nodes_(1) {}
  // Adds a path; returns its nodes (root excluded), one per step.
  std::vector<int32_t> add(const std::vector<int32_t>& in, const std::vector<int32_t>& target) {
    std::vector<int32_t> path;
    path.reserve(in.size());
    int32_t at = 0;
    for (size_t t = 0; t < in.size(); ++t) {
      auto [it, fresh] = index_.try_emplace(Key{at, in[t], target[t]}, int32_t(nodes_.size()));
      if (fresh) {
        nodes_.push_back(Node{in[t], target[t], {}, 0.0f, -1});
        nodes_[size_t(at)].kids.push_back(it->second);
      }
      at = it->second;
      path.push_back(at);
    }
    return path;
  }
  Node& operator[](int32_t i) { return nodes_[size_t(i)]; }
  int64_t size() const { return int64_t(nodes_.size()); }

 private:
  std::vector<Node> nodes_;
  std::unordered_map<Key, int32_t, KeyHash> index_;
};

// A chain of steps from `from` (a node whose state is known) down to a leaf or a branch point.
struct Row {
  int32_t from;
  std::vector<int32_t> nodes;
};

Row chain(Tree& tree, int32_t from, int32_t first) {
  Row r{from, {first}};
  while (tree[r.nodes.back()].kids.size() == 1) r.nodes.push_back(tree[r.nodes.back()].kids[0]);
  return r;
}

}  // namespace

PrefixScorer::PrefixScorer(Engine& engine, ScoreOptions opt) : engine_(&engine), opt_(opt) {
  opt_.validate();
}

StreamStart PrefixScorer::sentence_start() const {
  return StreamStart{State::zeros(engine_->model()), start_token(engine_->model().tokenizer())};
}

std::vector<LineScore> PrefixScorer::score(const std::vector<std::string>& lines,
                                           const std::vector<uint64_t>& line_numbers,
                                           const std::string& source, const StreamStart& from) {
  std::vector<LineScore> out(lines.size());
  for (size_t i = 0; i < lines.size(); ++i)
    out[i] = detail::tokenize_line(engine_->model(), lines[i], opt_, LineRef{source, line_numbers[i]});
  score_tokenized(out, from);
  return out;
}

void PrefixScorer::score_tokenized(std::vector<LineScore>& lines, const StreamStart& from) {
  // Each line's steps, as Scorer::run_sentences builds its row: inputs = [pending] + ids[:-1],
  // targets = ids; without a pending token the first id is context only.
  Tree tree;
  std::vector<std::vector<int32_t>> paths(lines.size());
  std::vector<int32_t> in, target;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].skipped) continue;
    auto ids = detail::fed_ids(lines[i]);
    in.clear();
    target.clear();
    if (!ids.empty()) {
      if (from.pending >= 0) {
        in.push_back(from.pending);
        in.insert(in.end(), ids.begin(), ids.end() - 1);
        target = ids;
      } else {
        in.assign(ids.begin(), ids.end() - 1);
        target.assign(ids.begin() + 1, ids.end());
      }
    }
    paths[i] = tree.add(in, target);
    ++stats_.lines;
    stats_.steps += int64_t(in.size());
  }
  stats_.computed += tree.size() - 1;

  std::deque<Row> queue;
  for (int32_t k : tree[0].kids) queue.push_back(chain(tree, 0, k));
  std::vector<State> kept;       // states of branch points whose rows are queued
  std::vector<int32_t> waiting;  // per kept slot: rows not yet run
  const auto bs = static_cast<size_t>(opt_.batch_size);
  Sequences inputs, targets;
  std::vector<State> states;
  std::vector<std::vector<float>> lp;
  while (!queue.empty()) {
    const size_t n = std::min(bs, queue.size());
    inputs.assign(n, {});
    targets.assign(n, {});
    states.clear();
    std::vector<Row> batch(std::make_move_iterator(queue.begin()),
                           std::make_move_iterator(queue.begin() + std::ptrdiff_t(n)));
    queue.erase(queue.begin(), queue.begin() + std::ptrdiff_t(n));
    for (size_t r = 0; r < n; ++r) {
      for (int32_t v : batch[r].nodes) {
        inputs[r].push_back(tree[v].in);
        targets[r].push_back(tree[v].target);
      }
      const int32_t slot = tree[batch[r].from].slot;
      states.push_back(slot < 0 ? from.state : kept[size_t(slot)]);
      if (slot >= 0 && --waiting[size_t(slot)] == 0) kept[size_t(slot)] = State{};  // its last row took it
    }
    engine_->score(inputs, targets, states, lp);
    for (size_t r = 0; r < n; ++r) {
      const auto& nodes = batch[r].nodes;
      for (size_t t = 0; t < nodes.size(); ++t) tree[nodes[t]].lp = lp[r][t];
      Node& end = tree[nodes.back()];
      if (end.kids.empty()) continue;
      end.slot = int32_t(kept.size());
      kept.push_back(std::move(states[r]));
      waiting.push_back(int32_t(end.kids.size()));
      for (int32_t k : end.kids) queue.push_back(chain(tree, nodes.back(), k));
    }
  }

  std::vector<float> values;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].skipped) continue;
    values.clear();
    for (int32_t v : paths[i]) values.push_back(tree[v].lp);
    detail::fill_line(lines[i], values.data(), from.pending < 0);
  }
}

StreamStart PrefixScorer::after(const StreamStart& from, const LineScore& line) {
  auto ids = detail::fed_ids(line);
  if (line.skipped || ids.empty()) return from;
  // The next stream starts by feeding this line's last token, from the state before it.
  Sequences seq(1);
  if (from.pending >= 0) seq[0].push_back(from.pending);
  seq[0].insert(seq[0].end(), ids.begin(), ids.end() - 1);
  std::vector<State> states{from.state};
  engine_->advance(seq, states);
  return StreamStart{std::move(states[0]), ids.back()};
}

}  // namespace lstmlm::tasks
