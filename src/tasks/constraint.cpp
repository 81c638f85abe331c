// Constraints lifted from bytes to tokens (tasks/constraint.hpp): a cursor is (DFA state, join class), where
// the join class is what Tokenizer::join_text puts before the next token's text (join_text(prev, ""): a
// word model's separator, a BPE piece's glue, nothing for a char model); the first token has a class of its
// own (no previous token). Each cursor's row over the vocabulary is made on first use.
#include "lstmlm/tasks/constraint.hpp"

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/input.hpp"
#include "lstmlm/tasks/request.hpp"
#include "tasks/regex.hpp"

namespace lstmlm::tasks {

struct Constraint::Impl {
  size_t V = 0;
  std::optional<detail::Dfa> dfa;
  std::vector<char> allowed;  // empty: every token
  std::optional<int32_t> end;
  std::vector<char> special;
  // Per join class, each token's text after a token of that class; and the class each token leaves.
  std::vector<std::vector<std::string>> texts;
  std::vector<int32_t> leaves;

  struct RowData {
    std::vector<int32_t> next;
    bool all = false, accepting = false, any = false;
  };
  std::map<std::pair<int32_t, int32_t>, int32_t> index;  // (dfa state, class) -> cursor
  std::vector<std::pair<int32_t, int32_t>> cursors;
  std::vector<std::unique_ptr<RowData>> rows;
  mutable std::mutex mu;

  int32_t cursor(int32_t state, int32_t cls) {
    auto [it, added] = index.emplace(std::make_pair(state, cls), static_cast<int32_t>(cursors.size()));
    if (added) {
      cursors.emplace_back(state, cls);
      rows.emplace_back();
    }
    return it->second;
  }

  const RowData& row(int32_t c) {
    auto& slot = rows[static_cast<size_t>(c)];
    if (slot) return *slot;
    auto r = std::make_unique<RowData>();
    const auto [state, cls] = cursors[static_cast<size_t>(c)];
    r->accepting = !dfa || dfa->accepting(state);
    r->next.assign(V, -1);
    size_t n_allowed = 0;
    for (size_t j = 0; j < V; ++j) {
      if (!allowed.empty() && !allowed[j]) continue;
      const auto id = static_cast<int32_t>(j);
      int32_t to = -1;
      if (end && id == *end) {
        if (r->accepting) to = c;
      } else if (special[j] || !dfa) {
        to = dfa ? c : 0;  // a special token adds no text
      } else {
        int32_t s = state;
        for (char ch : texts[static_cast<size_t>(cls)][j]) {
          s = dfa->step(s, static_cast<unsigned char>(ch));
          if (s < 0) break;
        }
        if (s >= 0) to = cursor(s, leaves[j]);  // may add a cursor: `slot` is re-read below
      }
      r->next[j] = to;
      n_allowed += to >= 0;
    }
    r->all = n_allowed == V;
    r->any = n_allowed > 0;
    auto& filled = rows[static_cast<size_t>(c)];
    filled = std::move(r);
    return *filled;
  }
};

Constraint::Constraint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Constraint::~Constraint() = default;

std::shared_ptr<const Constraint> Constraint::create(const Model& model, const ConstraintSpec& spec,
                                                     std::optional<int32_t> end) {
  auto m = std::make_unique<Impl>();
  const Tokenizer& tok = model.tokenizer();
  const Vocab& vocab = model.vocab();
  m->V = static_cast<size_t>(model.vocab_size());
  m->end = end;
  if (!spec.regex.empty()) m->dfa.emplace(spec.regex);
  if (spec.allowed) {
    m->allowed.assign(m->V, 0);
    for (int32_t id : *spec.allowed)
      if (id >= 0 && static_cast<size_t>(id) < m->V) m->allowed[static_cast<size_t>(id)] = 1;
    if (end) m->allowed[static_cast<size_t>(*end)] = 1;  // the end is always a choice where the text may end
  }
  m->special.assign(m->V, 0);
  for (size_t j = 0; j < m->V; ++j) m->special[j] = tok.is_special(static_cast<int32_t>(j));
  if (m->dfa) {
    // Class 0: no previous token. The others: one per distinct join_text(prev, ""), made from the first
    // token that leaves it (its representative).
    std::map<std::string, int32_t> classes;
    std::vector<std::string> reps;
    m->leaves.assign(m->V, 0);
    for (size_t j = 0; j < m->V; ++j) {
      if (m->special[j]) continue;
      const std::string& t = vocab.token(static_cast<int32_t>(j));
      auto [it, added] = classes.emplace(tok.join_text(t, ""), static_cast<int32_t>(reps.size()) + 1);
      if (added) reps.push_back(t);
      m->leaves[j] = it->second;
    }
    m->texts.resize(reps.size() + 1);
    for (size_t c = 0; c <= reps.size(); ++c) {
      auto& texts = m->texts[c];
      texts.resize(m->V);
      for (size_t j = 0; j < m->V; ++j) {
        if (m->special[j]) continue;
        const std::string& t = vocab.token(static_cast<int32_t>(j));
        texts[j] = c == 0 ? tok.join_text(std::nullopt, t) : tok.join_text(reps[c - 1], t);
      }
    }
  }
  m->cursor(m->dfa ? m->dfa->start() : 0, 0);
  return std::shared_ptr<const Constraint>(new Constraint(std::move(m)));
}

Constraint::Row Constraint::row(int32_t cursor) const {
  std::lock_guard lock(impl_->mu);
  const auto& r = impl_->row(cursor);
  return Row{r.next.data(), r.all, r.accepting, r.any};
}

bool Constraint::accepts(int32_t cursor) const {
  std::lock_guard lock(impl_->mu);
  return !impl_->dfa || impl_->dfa->accepting(impl_->cursors[static_cast<size_t>(cursor)].first);
}

bool Constraint::finishing(int32_t cursor, std::vector<int32_t>& out) const {
  std::lock_guard lock(impl_->mu);
  const auto& r = impl_->row(cursor);
  out = r.next;
  bool any = false;
  for (size_t j = 0; j < out.size(); ++j) {
    const int32_t to = out[j];
    if (to < 0) continue;
    if (impl_->dfa && !(impl_->end && static_cast<int32_t>(j) == *impl_->end) &&
        !impl_->dfa->accepting(impl_->cursors[static_cast<size_t>(to)].first))
      out[j] = -1;
    else
      any = true;
  }
  return any;
}

const char* Constraint::key() const { return impl_->dfa ? "regex" : "allowed_words"; }

size_t Constraint::automaton_states() const {
  std::lock_guard lock(impl_->mu);
  return impl_->dfa ? impl_->dfa->size() : 0;
}

std::vector<int32_t> Constraint::allowed_ids(const Model& model, const std::vector<std::string>& words,
                                             const std::string& source) {
  std::vector<int32_t> ids;
  size_t given = 0;
  for (const auto& w : words) {
    if (w.empty()) continue;
    ++given;
    if (auto id = model.vocab().find(w)) ids.push_back(*id);
  }
  if (ids.empty())
    throw UsageError::option("allowed_words", ": " + source + ": none of its " + std::to_string(given) +
                                                  " words is in the model's vocabulary");
  return ids;
}

std::vector<int32_t> Constraint::load_allowed(const Model& model, const std::string& path) {
  const std::string text = read_small_file(path, uint64_t{64} << 20);
  std::vector<std::string> lines;
  std::vector<LineEnd> ends;
  split_lines(text, lines, ends);
  return allowed_ids(model, lines, path);
}

}  // namespace lstmlm::tasks
