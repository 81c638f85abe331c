#include "lstmlm/tasks/keyboard.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <unordered_map>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/logit_bias.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/text.hpp"
#include "model/unicode.hpp"

namespace lstmlm::tasks {

namespace {

bool better(const float* lp, int32_t a, int32_t b) { return lp[a] != lp[b] ? lp[a] > lp[b] : a < b; }

Candidate candidate(const Model& model, int32_t id, float lp) {
  return {id, model.vocab().token(id), std::exp(static_cast<double>(lp)), lp};
}

}  // namespace

Completer::Completer(const Model& model) : model_(&model) {
  const Tokenizer& t = model.tokenizer();
  const auto& vocab = model.vocab();
  for (int32_t id = 0; id < vocab.size(); ++id)
    if (!t.is_special(id)) sorted_.push_back(id);
  std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
    const std::string &x = vocab.token(a), &y = vocab.token(b);
    return x != y ? x < y : a < b;
  });
  for (int32_t id : sorted_)
    if (id != t.unk_id()) no_unk_.push_back(id);
}

std::string Completer::normalize(std::string_view prefix) const {
  if (!model_->tokenizer().config().lowercase) return std::string(prefix);
  size_t bad = 0;
  auto cps = model::decode_utf8(prefix, &bad);
  // A prefix cut inside a character (a keystroke mid-sequence) is lowercased up to that character.
  if (!cps) {
    auto head = model::decode_utf8(prefix.substr(0, bad), &bad);
    return (head ? model::encode_utf8(model::lowercase(*head)) : std::string()) +
           std::string(prefix.substr(bad));
  }
  return model::encode_utf8(model::lowercase(*cps));
}

std::span<const int32_t> Completer::matching(std::string_view raw) const {
  const std::string prefix = normalize(raw);
  const std::vector<int32_t>& ids = prefix.empty() ? sorted_ : no_unk_;
  const auto& vocab = model_->vocab();
  // The tokens starting with prefix are those >= prefix and, compared on prefix.size() bytes, equal to it.
  auto lo = std::lower_bound(ids.begin(), ids.end(), prefix,
                             [&](int32_t id, const std::string& p) { return vocab.token(id) < p; });
  auto hi = std::upper_bound(lo, ids.end(), prefix, [&](const std::string& p, int32_t id) {
    return std::string_view(vocab.token(id)).substr(0, p.size()) > p;
  });
  return {ids.data() + (lo - ids.begin()), static_cast<size_t>(hi - lo)};
}

std::shared_ptr<const Completer> Completer::of(const Model& model) {
  return std::static_pointer_cast<const Completer>(model.derived(
      "tasks.completer", [&] { return std::make_shared<const Completer>(model); }, false));
}

std::vector<Candidate> Completer::complete(const float* logprobs, std::string_view prefix, int top) const {
  auto span = matching(prefix);
  std::vector<int32_t> ids(span.begin(), span.end());
  const size_t n = top <= 0 ? ids.size() : std::min(ids.size(), static_cast<size_t>(top));
  std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), ids.end(),
                    [&](int32_t a, int32_t b) { return better(logprobs, a, b); });
  std::vector<Candidate> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(candidate(*model_, ids[i], logprobs[ids[i]]));
  return out;
}

void check_completion(const Model& model, Completion how, std::string_view prefix) {
  const auto& t = model.tokenizer().traits();
  if (prefix.empty() || t.completion == how) return;
  if (t.completion == Completion::None)
    throw UsageError::option("prefix",
                             std::string(": a ") + t.name +
                                 " model completes no half-typed word (its pieces are not words, and "
                                 "typed letters need not be a piece): give no prefix");
  if (t.completion == Completion::CharBeam)
    throw UsageError::option("prefix",
                             ": a character model completes the typed characters fed as text "
                             "(predict's prefix, Python's Model.complete), not from a word index");
  throw UsageError::option("prefix", std::string(": a ") + t.name + " model completes from its word index");
}

std::vector<Candidate> complete_chars(Engine& engine, const State& after, std::span<const float> logprobs,
                                      int top, int max_chars, const std::function<void()>& between_steps) {
  const Model& model = engine.model();
  const Tokenizer& tok = model.tokenizer();
  if (tok.traits().completion != Completion::CharBeam)
    throw UsageError("complete_chars: a character model's completion; a word model uses Completer");
  const int V = model.vocab_size();
  if (static_cast<int>(logprobs.size()) != V)
    throw UsageError("complete_chars: the row has " + std::to_string(logprobs.size()) + " log-probs, not V");
  const size_t width = static_cast<size_t>(std::clamp(top, 1, 64));
  std::u32string filters;
  if (auto f = model::decode_utf8(tok.config().filters, nullptr)) filters = *f;
  std::vector<bool> boundary(static_cast<size_t>(V));
  for (int32_t id = 0; id < V; ++id) {
    const std::string& s = model.vocab().token(id);
    auto cp = model::decode_utf8(s, nullptr);
    const bool space = cp && cp->size() == 1 &&
                       (model::is_python_space((*cp)[0]) || filters.find((*cp)[0]) != std::u32string::npos);
    boundary[static_cast<size_t>(id)] = tok.is_special(id) || space || s.empty();
  }
  struct Beam {
    std::vector<int32_t> chars;
    double lp = 0;
    State state;
    std::vector<float> next;
  };
  std::vector<Beam> open;
  open.push_back({{}, 0.0, after, std::vector<float>(logprobs.begin(), logprobs.end())});
  struct Done {
    std::vector<int32_t> chars;
    int32_t end;
    double lp;
  };
  std::vector<Done> done;
  for (int step = 0; step <= max_chars && !open.empty(); ++step) {
    // Every extension of every open beam; a boundary ends a completion, a letter stays open.
    struct Ext {
      size_t beam;
      int32_t id;
      double lp;
    };
    std::vector<Ext> ext;
    for (size_t b = 0; b < open.size(); ++b) {
      const float* row = open[b].next.data();
      std::vector<int32_t> ids(static_cast<size_t>(V));
      for (int32_t i = 0; i < V; ++i) ids[static_cast<size_t>(i)] = i;
      const size_t k = std::min(ids.size(), 2 * width);
      std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(k), ids.end(),
                        [&](int32_t a, int32_t c) { return better(row, a, c); });
      for (size_t i = 0; i < k; ++i) ext.push_back({b, ids[i], open[b].lp + double(row[ids[i]])});
    }
    std::stable_sort(ext.begin(), ext.end(), [](const Ext& a, const Ext& b) { return a.lp > b.lp; });
    std::vector<Beam> next;
    Sequences feed;
    for (const auto& e : ext) {
      const bool ends = boundary[static_cast<size_t>(e.id)] || step == max_chars;
      if (ends) {
        done.push_back({open[e.beam].chars, e.id, e.lp});  // a later step's may beat an earlier one's
      } else if (next.size() < width) {
        Beam nb{open[e.beam].chars, e.lp, open[e.beam].state, {}};
        nb.chars.push_back(e.id);
        next.push_back(std::move(nb));
        feed.push_back({e.id});
      }
    }
    // Log-probs only fall as a beam grows: once `width` completions beat every open beam, none can win.
    std::stable_sort(done.begin(), done.end(), [](const Done& a, const Done& b) { return a.lp > b.lp; });
    if (done.size() > width) done.resize(width);
    if (done.size() >= width) {
      const double worst = done[width - 1].lp;
      std::erase_if(next, [&](const Beam& b) { return b.lp <= worst; });
      feed.resize(next.size());
      for (size_t i = 0; i < next.size(); ++i) feed[i] = {next[i].chars.back()};
    }
    if (next.empty()) break;
    std::vector<State> states;
    for (auto& b : next) states.push_back(std::move(b.state));
    MatrixRM lp;
    engine.predict(feed, states, lp);
    if (between_steps) between_steps();
    for (size_t i = 0; i < next.size(); ++i) {
      next[i].state = std::move(states[i]);
      const float* row = lp.row(static_cast<Eigen::Index>(i)).data();
      next[i].next.assign(row, row + V);
    }
    open = std::move(next);
  }
  std::vector<Candidate> out;
  for (const auto& d : done) {
    Candidate c;
    c.id = d.end;
    c.token = tok.detokenize(d.chars);
    c.logprob = static_cast<float>(d.lp);
    c.prob = std::exp(d.lp);
    out.push_back(std::move(c));
  }
  return out;
}

uint32_t Boost::child(uint32_t node, int32_t token) const {
  const auto& ch = nodes_[node].children;
  auto it = std::lower_bound(ch.begin(), ch.end(), token,
                             [](const std::pair<int32_t, uint32_t>& c, int32_t t) { return c.first < t; });
  return it != ch.end() && it->first == token ? it->second : 0;
}

Boost Boost::parse(const Model& model, const std::vector<std::string>& lines, const std::string& source) {
  Boost b;
  // Built with a map from (node, token) to node, then each node's children sorted once: inserting into
  // sorted vectors would be quadratic in the entries of one node (100,000 single words under the root).
  std::unordered_map<uint64_t, uint32_t> edges;
  std::unordered_map<uint32_t, uint64_t> line_of;  // terminal node -> the line that set it
  for (size_t i = 0; i < lines.size(); ++i) {
    const LineRef where{source, i + 1};
    std::string_view line = lines[i];
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    const size_t tab = line.rfind('\t');
    if (tab == std::string_view::npos)
      throw where.error("a boost entry is 'PHRASE<TAB>BONUS' (the bonus a natural log); no tab in '" +
                        printable(line, 80) + "'");
    const std::string value(line.substr(tab + 1));
    char* end = nullptr;
    errno = 0;
    const double bonus = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE || !std::isfinite(bonus) ||
        std::fabs(bonus) > 100)
      throw where.error("bonus '" + printable(value, 40) +
                        "' is not a number in [-100, 100] (natural-log units)");
    std::vector<int32_t> ids;
    std::vector<Token> tokens;
    try {
      tokens = model.tokenizer().tokenize(line.substr(0, tab), kMaxLineTokens);
    } catch (const InputError& e) {
      throw where.error(e.message());
    }
    for (const auto& t : tokens) {
      if (t.oov || t.id < 0)
        throw where.error("'" + printable(t.text, 80) +
                          "' is not in the vocabulary: a boost is for words the model can predict");
      ids.push_back(t.id);
    }
    if (ids.empty()) throw where.error("the phrase has no token");
    if (ids.size() > Boost::kMaxPhraseTokens)
      throw where.error("the phrase has " + std::to_string(ids.size()) + " tokens, more than the " +
                        std::to_string(Boost::kMaxPhraseTokens) +
                        " a boost phrase may have (each step looks back over the longest phrase)");
    uint32_t node = 0;
    for (int32_t id : ids) {
      const uint64_t key = (uint64_t{node} << 32) | static_cast<uint32_t>(id);
      auto [it, fresh] = edges.try_emplace(key, static_cast<uint32_t>(b.nodes_.size()));
      if (fresh) {
        b.nodes_[node].children.emplace_back(id, it->second);
        b.nodes_.emplace_back();
      }
      node = it->second;
    }
    if (b.nodes_[node].terminal)
      throw where.error("the phrase '" + printable(line.substr(0, tab), 80) + "' is boosted on line " +
                        std::to_string(line_of[node]) + " already");
    b.nodes_[node].terminal = true;
    b.nodes_[node].bonus = static_cast<float>(bonus);
    line_of[node] = i + 1;
    ++b.entries_;
    b.longest_ = std::max(b.longest_, ids.size());
  }
  for (auto& n : b.nodes_) std::sort(n.children.begin(), n.children.end());
  return b;
}

Boost Boost::load(const Model& model, const std::string& path) {
  // A boost file is a user's word list: 64 MiB is far above any (100,000 phrases take about 2 MB).
  const std::string text = read_small_file(path, uint64_t{64} << 20);
  std::vector<std::string> lines;
  std::vector<LineEnd> ends;
  split_lines(text, lines, ends);  // a BOM dropped, as score drops it
  return parse(model, lines, path);
}

std::vector<std::pair<int32_t, float>> Boost::bonuses(std::span<const int32_t> history) const {
  std::vector<std::pair<int32_t, float>> out;
  if (entries_ == 0) return out;
  // Each suffix of the history no longer than longest - 1 tokens, the empty one included, reaches at most
  // one node; the terminal children of that node are boosted.
  const size_t ctx = std::min(history.size(), longest_ - 1);
  for (size_t len = 0; len <= ctx; ++len) {
    uint32_t node = 0;
    bool found = true;
    for (size_t k = history.size() - len; k < history.size(); ++k) {
      node = child(node, history[k]);
      if (node == 0) {
        found = false;
        break;
      }
    }
    if (!found) continue;
    for (const auto& [token, n] : nodes_[node].children)
      if (nodes_[n].terminal) out.emplace_back(token, nodes_[n].bonus);
  }
  return out;
}

void Boost::apply(std::span<const int32_t> history, float* logprobs, int V) const {
  const auto add = bonuses(history);
  if (add.empty()) return;
  for (const auto& [id, bonus] : add)
    if (id >= 0 && id < V) logprobs[id] += bonus;
  renormalize_logprobs(logprobs, V);  // the boosted row sums to 1 again
}

}  // namespace lstmlm::tasks
