// Word completion and boosting (tasks/keyboard.hpp) on the bundled models, each against a naive reference
// written here: completion against a scan of the whole vocabulary, character completion against the
// engine's own single steps, boosting against the definition lp + b renormalized in double.
#include "lstmlm/tasks/keyboard.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "test_util.hpp"

namespace {

using namespace lstmlm;
using namespace lstmlm::tasks;

std::shared_ptr<const Model> bundled_model(const std::string& name) {
  return Model::load((test::source_dir() / "models" / name).string());
}

std::vector<float> distribution_after(Engine& engine, const std::vector<int32_t>& ids, State* out = nullptr) {
  std::vector<State> states{State::zeros(engine.model())};
  MatrixRM lp;
  engine.predict({ids}, states, lp);
  if (out) *out = states[0];
  const float* row = lp.row(0).data();
  return {row, row + engine.model().vocab_size()};
}

TEST(Completer, MatchesAScanOfTheVocabulary) {
  auto m = bundled_model("fairytales-word");
  Engine engine(m, 1);
  Completer c(*m);
  const auto lp = distribution_after(engine, {*m->tokenizer().eos_id(), *m->vocab().find("the")});
  for (std::string prefix : {"", "k", "ki", "the", "s", "zzq", "a", "wa"}) {
    std::vector<int32_t> want;
    for (int32_t id = 0; id < m->vocab_size(); ++id) {
      const std::string& t = m->vocab().token(id);
      if (m->tokenizer().is_special(id) || (!prefix.empty() && id == m->tokenizer().unk_id())) continue;
      if (t.compare(0, prefix.size(), prefix) == 0) want.push_back(id);
    }
    auto got = c.matching(prefix);
    std::vector<int32_t> sorted_got(got.begin(), got.end());
    std::sort(sorted_got.begin(), sorted_got.end());
    EXPECT_EQ(sorted_got, want) << "'" << prefix << "'";
    std::sort(want.begin(), want.end(),
              [&](int32_t a, int32_t b) { return lp[a] != lp[b] ? lp[a] > lp[b] : a < b; });
    for (int top : {1, 5, 0}) {
      auto best = c.complete(lp.data(), prefix, top);
      const size_t n = top == 0 ? want.size() : std::min<size_t>(want.size(), size_t(top));
      ASSERT_EQ(best.size(), n) << prefix;
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(best[i].id, want[i]) << prefix << " " << i;
        EXPECT_EQ(best[i].logprob, lp[want[i]]);
        EXPECT_EQ(best[i].token.rfind(prefix, 0), 0u);
      }
    }
  }
  if (m->tokenizer().config().lowercase) {  // what the tokenizer would do to the typed letters
    auto upper = c.matching("Ki"), lower = c.matching("ki");
    EXPECT_EQ(std::vector<int32_t>(upper.begin(), upper.end()),
              std::vector<int32_t>(lower.begin(), lower.end()));
  }
}

TEST(Completer, CharacterCompletionsAreTheEnginesOwnSteps) {
  auto m = bundled_model("charrnn-space");
  Engine engine(m, 1);
  std::vector<int32_t> ctx;
  for (const auto& t : m->tokenizer().tokenize("once upon a time the ki")) ctx.push_back(t.id);
  State after;
  const auto lp = distribution_after(engine, ctx, &after);
  auto got = complete_chars(engine, after, lp, 4);
  ASSERT_FALSE(got.empty());
  ASSERT_LE(got.size(), 4u);
  for (size_t i = 0; i + 1 < got.size(); ++i) EXPECT_GE(got[i].logprob, got[i + 1].logprob);
  for (const auto& c : got) {
    // Replayed one character at a time with Engine::step: the sum of their log-probs, the boundary last.
    State s = after, next;
    std::vector<float> row = lp;
    double sum = 0;
    for (const auto& t : m->tokenizer().tokenize(c.token)) {
      EXPECT_NE(t.text, " ") << "a completion runs past the word boundary: '" << c.token << "'";
      sum += row[size_t(t.id)];
      engine.step(s, t.id, next, row);
      s = next;
    }
    sum += row[size_t(c.id)];
    EXPECT_NEAR(c.logprob, sum, 1e-4) << c.token;
    const std::string& b = m->vocab().token(c.id);
    EXPECT_TRUE(b == " " || m->tokenizer().is_special(c.id) || b == "\n" || b == "." || b == "," ||
                m->tokenizer().config().filters.find(b) != std::string::npos)
        << "'" << b << "' ends a completion";
  }
  // The caller's check runs after every engine step, and what it throws ends the search (Python's Ctrl-C).
  int steps = 0;
  auto counted = complete_chars(engine, after, lp, 4, 24, [&] { ++steps; });
  EXPECT_EQ(counted.size(), got.size());
  EXPECT_GE(steps, 3);  // "king" is 3 letters past "ki": at least that many steps
  struct Stop {};
  int calls = 0;
  EXPECT_THROW(complete_chars(engine, after, lp, 4, 24,
                              [&] {
                                if (++calls == 2) throw Stop{};
                              }),
               Stop);
  EXPECT_EQ(calls, 2);
  // A completion a later step finds beats one an earlier step found: "king" (p 0.28) leads at width 2 too,
  // though "kid" and "kin" end a step before it.
  auto two = complete_chars(engine, after, lp, 2);
  ASSERT_FALSE(two.empty());
  EXPECT_EQ(two[0].token, got[0].token);
  EXPECT_EQ(two[0].logprob, got[0].logprob);
  // Width 1 is greedy decoding up to the first boundary.
  auto greedy = complete_chars(engine, after, lp, 1);
  ASSERT_EQ(greedy.size(), 1u);
  State s = after, next;
  std::vector<float> row = lp;
  std::string word;
  for (int k = 0; k < 24; ++k) {
    const int32_t best = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
    const std::string& t = m->vocab().token(best);
    if (t == " " || m->tokenizer().is_special(best) ||
        m->tokenizer().config().filters.find(t) != std::string::npos)
      break;
    word += t;
    engine.step(s, best, next, row);
    s = next;
  }
  EXPECT_EQ(greedy[0].token, word);
}

TEST(Boost, BonusesFollowTheHistoryAndRenormalize) {
  auto m = bundled_model("fairytales-word");
  Engine engine(m, 1);
  auto id = [&](const char* w) { return *m->vocab().find(w); };
  Boost b = Boost::parse(
      *m, {"# keyboard boosts", "king\t2", "", "the king\t1.5", "once upon\t-1", "princess\t0.5"}, "b.tsv");
  EXPECT_EQ(b.size(), 4u);
  EXPECT_EQ(b.longest(), 2u);
  // After "the": king gets 2 + 1.5, queen 0.5; "upon" is boosted only after "once".
  std::map<int32_t, float> got;
  for (auto [t, v] : b.bonuses(std::vector<int32_t>{id("a"), id("the")})) got[t] += v;
  EXPECT_EQ(got, (std::map<int32_t, float>{{id("king"), 3.5f}, {id("princess"), 0.5f}}));
  got.clear();
  for (auto [t, v] : b.bonuses(std::vector<int32_t>{id("once")})) got[t] += v;
  EXPECT_EQ(got, (std::map<int32_t, float>{{id("king"), 2.0f}, {id("princess"), 0.5f}, {id("upon"), -1.0f}}));

  const std::vector<int32_t> hist{*m->tokenizer().eos_id(), id("the")};
  auto lp = distribution_after(engine, hist);
  auto boosted = lp;
  b.apply(hist, boosted.data(), m->vocab_size());
  // The definition in double: lp_j + b_j, renormalized.
  std::vector<double> want(lp.begin(), lp.end());
  want[size_t(id("king"))] += 3.5;
  want[size_t(id("princess"))] += 0.5;
  double s = 0;
  for (double x : want) s += std::exp(x);
  double total = 0;
  for (size_t j = 0; j < want.size(); ++j) {
    EXPECT_NEAR(boosted[j], want[j] - std::log(s), 1e-5) << j;
    total += std::exp(double(boosted[j]));
  }
  EXPECT_NEAR(total, 1.0, 1e-5);
  EXPECT_GT(boosted[size_t(id("king"))], lp[size_t(id("king"))]);
}

TEST(Boost, AHundredThousandPhrasesAgainstAMap) {
  auto m = bundled_model("fairytales-word");
  const int V = m->vocab_size();
  std::mt19937_64 rng(7);
  std::map<std::pair<int32_t, int32_t>, float> ref;  // (previous, token) -> bonus
  std::vector<std::string> lines;
  auto word = [&](int32_t i) { return m->vocab().token(i); };
  std::vector<int32_t> plain;
  for (int32_t i = 0; i < V; ++i)
    if (!m->tokenizer().is_special(i) && i != m->tokenizer().unk_id() &&
        m->tokenizer().tokenize(word(i)).size() == 1 && m->tokenizer().tokenize(word(i))[0].id == i)
      plain.push_back(i);
  while (ref.size() < 100000) {
    const int32_t a = plain[rng() % plain.size()], c = plain[rng() % plain.size()];
    const float bonus = float(int(rng() % 200) - 100) / 10.0f;
    if (ref.emplace(std::make_pair(a, c), bonus).second)
      lines.push_back(word(a) + " " + word(c) + "\t" + std::to_string(bonus));
  }
  Boost b = Boost::parse(*m, lines, "big.tsv");
  EXPECT_EQ(b.size(), 100000u);
  for (int k = 0; k < 200; ++k) {
    const int32_t prev = plain[rng() % plain.size()];
    std::map<int32_t, float> want, got;
    for (auto it = ref.lower_bound({prev, -1}); it != ref.end() && it->first.first == prev; ++it)
      want[it->first.second] = std::stof(std::to_string(it->second));
    for (auto [t, v] : b.bonuses(std::vector<int32_t>{plain[0], prev})) got[t] += v;
    EXPECT_EQ(got, want) << "after " << word(prev);
  }
}

TEST(Boost, MalformedFilesAreOneLineErrors) {
  auto m = bundled_model("fairytales-word");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"king 2"}, "b:1: a boost entry is 'PHRASE<TAB>BONUS'"},
      {{"king\tbig"}, "b:1: bonus 'big' is not a number in [-100, 100]"},
      {{"king\t1e9"}, "b:1: bonus '1e9' is not a number in [-100, 100]"},
      {{"king\tnan"}, "b:1: bonus 'nan' is not a number"},
      {{"#", "zzqx\t1"}, "b:2: 'zzqx' is not in the vocabulary"},
      {{"\t1"}, "b:1: the phrase has no token"},
      {{"king\t1", "the king\t1", "King\t2"}, "b:3: the phrase 'King' is boosted on line 1 already"},
      {{"the \xff\t1"}, "b:1: invalid UTF-8"},
      {{std::string(260, ' ') + "\t1"}, "b:1: the phrase has no token"},
      {{[] {
         std::string p;
         for (int i = 0; i < 65; ++i) p += "the ";
         return p + "\t1";
       }()},
       "b:1: the phrase has 65 tokens, more than the 64 a boost phrase may have"},
  };
  for (const auto& [lines, msg] : cases) {
    try {
      Boost::parse(*m, lines, "b");
      ADD_FAILURE() << msg;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(msg, 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(Boost::load(*m, "/no/such/boosts.tsv"), InputError);
}

// The predict task with a prefix ranks what the Completer ranks on the same row; with a boost, the boosted
// row; generate samples from the boosted row but reports the model's own log-probs.
TEST(Keyboard, PredictAndGenerateUseThem) {
  auto m = bundled_model("fairytales-word");
  Engine engine(m, 1);
  PredictOptions o;
  o.top = 3;
  o.prefix = "k";
  auto r = predict(engine, {"once upon a time there was a"}, o, "-", 1);
  const auto lp = distribution_after(engine, r[0].ids);
  auto want = Completer(*m).complete(lp.data(), "k", 3);
  ASSERT_EQ(r[0].top.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r[0].top[i].id, want[i].id);
    EXPECT_EQ(r[0].top[i].logprob, want[i].logprob);
  }
  o.prefix.clear();
  o.top = 1;
  o.boost = std::make_shared<Boost>(Boost::parse(*m, {"daughter\t30"}, "b"));
  r = predict(engine, {"once upon a time there was a"}, o, "-", 1);
  EXPECT_EQ(r[0].top[0].token, "daughter");
  EXPECT_GT(r[0].top[0].prob, 0.99);

  tasks::GenerateOptions g;
  g.prompt = "once upon a time";
  g.max_tokens = 5;
  g.sampler.temperature = 0;
  g.stop_at_eos = false;
  auto plain = generate(engine, g);
  g.boost = o.boost;
  auto boosted = generate(engine, g);
  const int32_t daughter = *m->vocab().find("daughter");
  size_t plain_hits = 0;
  for (const auto& t : plain.samples[0].tokens) plain_hits += t.id == daughter;
  EXPECT_LT(plain_hits, 5u);
  ASSERT_EQ(boosted.samples[0].tokens.size(), 5u);
  std::vector<int32_t> fed = boosted.prompt.context;
  for (const auto& t : boosted.samples[0].tokens) {
    EXPECT_EQ(t.id, daughter);
    EXPECT_EQ(t.logprob, distribution_after(engine, fed)[size_t(daughter)]);  // the model's, unboosted
    fed.push_back(t.id);
  }
}

TEST(Keyboard, CharacterModelPrefixCompletesTheWord) {
  auto m = bundled_model("charrnn-space");
  Engine engine(m, 1);
  PredictOptions o;
  o.top = 3;
  o.prefix = "ki";
  // The context ends with the space that ends its last word; the completions are whole words.
  auto r = predict(engine, {"once upon a time the "}, o, "-", 1);
  ASSERT_FALSE(r[0].top.empty());
  for (const auto& c : r[0].top) {
    EXPECT_EQ(c.token.rfind("ki", 0), 0u) << c.token;
    EXPECT_EQ(c.token.find(' '), std::string::npos) << c.token;
  }
  EXPECT_EQ(r[0].top[0].token, "king");
  o.window = {WindowMode::Window, 8};
  EXPECT_THROW(predict(engine, {"the"}, o, "-", 1), UsageError);
}

}  // namespace
