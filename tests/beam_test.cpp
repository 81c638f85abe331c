// Beam search, logit biases and constraints on small random models: invariance over batch sizes and thread
// counts, equality with a brute-force enumeration, the regex automaton against std::regex, constrained
// outputs that match, and the refusals.
#include "lstmlm/tasks/beam.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/constraint.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/keyboard.hpp"
#include "lstmlm/tasks/logit_bias.hpp"
#include "tasks/regex.hpp"

namespace {

// A random word model (t0..t{V-1}), t0 its eos token made `eos_bias` more likely.
std::shared_ptr<const lstmlm::Model> beam_model(int V, float eos_bias, uint64_t seed) {
  auto base = lstmlm::Model::random(V, 8, 16, 2, seed);
  lstmlm::ModelConfig c = base->config();
  c.tokenizer.eos_token = "t0";
  lstmlm::Weights w = base->weights();
  w.decoder_bias[0] += eos_bias;
  return lstmlm::Model::create(c, base->vocab(), w);
}

// A random character model over "abc" and a space, with "</s>" its eos token.
std::shared_ptr<const lstmlm::Model> beam_char_model(uint64_t seed) {
  auto base = lstmlm::Model::random(5, 8, 16, 1, seed);
  lstmlm::ModelConfig c = base->config();
  c.tokenizer.type = lstmlm::TokenizerType::Char;
  c.tokenizer.eos_token = "</s>";
  return lstmlm::Model::create(c, lstmlm::Vocab({"a", "b", "c", " ", "</s>"}), base->weights());
}

lstmlm::tasks::GenerateOptions beam_options(const std::string& prompt, int n, int k, int best) {
  lstmlm::tasks::GenerateOptions o;
  o.prompt = prompt;
  o.max_tokens = n;
  o.beam.beam_size = k;
  o.beam.n_best = best;
  return o;
}

struct BeamOut {
  std::vector<int32_t> ids;
  std::vector<float> lps;
  double logprob, score;
  bool operator==(const BeamOut&) const = default;
};

std::vector<BeamOut> beam_outs(const lstmlm::tasks::BeamResult& r) {
  std::vector<BeamOut> v;
  for (const auto& h : r.hypotheses) {
    BeamOut b{h.ids(), {}, h.total_logprob, h.score};
    for (const auto& t : h.tokens) b.lps.push_back(t.logprob);
    v.push_back(b);
  }
  return v;
}

TEST(BeamSearch, SameForAnyBatchSizeAndThreadCount) {
  auto model = beam_model(60, 1.0f, 5);
  lstmlm::Engine one(model, 1);
  lstmlm::Engine two(model,
                     lstmlm::EngineOptions{.threads = 2, .column_split_bytes = 0, .row_split_bytes = 0});
  auto o = beam_options("t3 t4", 12, 8, 8);
  o.beam.length_penalty = 0.6f;
  const auto ref = beam_outs(beam_search(one, o));
  ASSERT_EQ(ref.size(), 8u);
  for (int bs : {1, 3, 5, 8}) {
    o.beam.batch_size = bs;
    EXPECT_EQ(beam_outs(beam_search(one, o)), ref) << "batch size " << bs;
    EXPECT_EQ(beam_outs(beam_search(two, o)), ref) << "batch size " << bs << ", 2 threads";
  }
  // Best first, and each total is the sum of its tokens'.
  for (size_t i = 0; i < ref.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(ref[i - 1].score, ref[i].score);
    }
    double s = 0;
    for (float lp : ref[i].lps) s += lp;
    EXPECT_EQ(ref[i].logprob, s);
  }
}

// Every sequence of at most n tokens that either ends at eos or has n tokens, with its ln p summed in double
// from single engine steps (a path independent of the beam's batched predict).
struct Seq {
  std::vector<int32_t> ids;
  double logprob;
};
void enumerate(lstmlm::Engine& e, const lstmlm::State& s, const std::vector<float>& lp,
               std::vector<int32_t>& ids, double total, int n, std::vector<Seq>& out) {
  for (int32_t t = 0; t < static_cast<int32_t>(lp.size()); ++t) {
    ids.push_back(t);
    const double sum = total + lp[static_cast<size_t>(t)];
    if (t == 0 || static_cast<int>(ids.size()) == n) {
      out.push_back({ids, sum});
    } else {
      lstmlm::State next;
      std::vector<float> nlp;
      e.step(s, t, next, nlp);
      enumerate(e, next, nlp, ids, sum, n, out);
    }
    ids.pop_back();
  }
}

TEST(BeamSearch, EqualsBruteForceWhenTheBeamHoldsEverySequence) {
  for (float alpha : {0.0f, 1.0f}) {
    for (int n : {1, 3, 5}) {
      auto model = beam_model(4, 0.5f, 17 + static_cast<uint64_t>(n));
      lstmlm::Engine engine(model, 1);
      // The start: eos (the model has no bos), then "t2".
      lstmlm::State s0 = lstmlm::State::zeros(*model), s1, s2;
      std::vector<float> lp;
      engine.step(s0, 0, s1, lp);
      engine.step(s1, 2, s2, lp);
      std::vector<Seq> all;
      std::vector<int32_t> ids;
      enumerate(engine, s2, lp, ids, 0.0, n, all);
      auto norm = [&](const Seq& q) {
        return q.logprob / lstmlm::tasks::length_penalty(alpha, q.ids.size());
      };
      std::stable_sort(all.begin(), all.end(), [&](const Seq& a, const Seq& b) { return norm(a) > norm(b); });
      // 4 + 12 + 36 + 108 + 324 sequences at most for n = 5: a beam of 1000 prunes nothing.
      auto o = beam_options("t2", n, 1000, std::min<int>(20, static_cast<int>(all.size())));
      o.beam.length_penalty = alpha;
      const auto r = beam_search(engine, o);
      ASSERT_EQ(r.hypotheses.size(), static_cast<size_t>(o.beam.n_best));
      for (size_t i = 0; i < r.hypotheses.size(); ++i) {
        EXPECT_EQ(r.hypotheses[i].ids(), all[i].ids) << "n " << n << " alpha " << alpha << " rank " << i;
        EXPECT_NEAR(r.hypotheses[i].total_logprob, all[i].logprob, 1e-5);
        EXPECT_NEAR(r.hypotheses[i].score, norm(all[i]), 1e-5);
        EXPECT_EQ(r.hypotheses[i].stopped_at_eos, all[i].ids.back() == 0);
      }
      // A narrower beam still finds the single best sequence here, and never a better one than it.
      auto narrow = beam_options("t2", n, 4, 1);
      narrow.beam.length_penalty = alpha;
      EXPECT_LE(beam_search(engine, narrow).hypotheses[0].score, norm(all[0]) + 1e-9);
    }
  }
}

TEST(BeamSearch, BeamOfOneIsGreedy) {
  auto model = beam_model(50, 0.0f, 9);
  lstmlm::Engine engine(model, 1);
  auto g = beam_options("t1", 15, 0, 1);
  g.stop_at_eos = false;
  g.sampler.temperature = 0;
  auto b = beam_options("t1", 15, 1, 1);
  b.stop_at_eos = false;
  EXPECT_EQ(beam_search(engine, b).hypotheses.at(0).ids(), generate(engine, g).samples.at(0).ids());
}

TEST(BeamSearch, NoRepeatNgramAndStopStrings) {
  auto model = beam_model(6, -3.0f, 3);
  lstmlm::Engine engine(model, 1);
  auto o = beam_options("t1", 30, 4, 4);
  o.beam.no_repeat_ngram = 2;
  for (const auto& h : beam_search(engine, o).hypotheses) {
    std::vector<int32_t> seq{1};
    for (int32_t id : h.ids()) seq.push_back(id);
    for (size_t i = 0; i + 1 < seq.size(); ++i)
      for (size_t j = i + 1; j + 1 < seq.size(); ++j)
        EXPECT_FALSE(seq[i] == seq[j] && seq[i + 1] == seq[j + 1]) << "bigram repeated at " << i << ", " << j;
  }
  auto s = beam_options("t1", 30, 4, 4);
  s.stop = {"t3"};
  for (const auto& h : beam_search(engine, s).hypotheses) {
    const auto ids = h.ids();
    if (!h.stopped_at_eos && ids.size() < 30) {
      EXPECT_EQ(h.stopped_at, "t3");
      EXPECT_EQ(ids.back(), 3);
    }
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 3), ids.back() == 3 ? 1 : 0);
  }
}

TEST(BeamSearch, RefusesBadOptions) {
  auto model = beam_model(10, 0.0f, 1);
  lstmlm::Engine engine(model, 1);
  auto key_of = [&](const lstmlm::tasks::GenerateOptions& o) {
    try {
      beam_search(engine, o);
    } catch (const lstmlm::UsageError& e) {
      return e.key();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(key_of(beam_options("t1", 5, 0, 1)), "beam_size");
  EXPECT_EQ(key_of(beam_options("t1", 5, 1000000000, 1)), "beam_size");
  EXPECT_EQ(key_of(beam_options("t1", 5, 2, 3)), "n_best");
  auto o = beam_options("t1", 5, 2, 1);
  o.beam.length_penalty = std::nanf("");
  EXPECT_EQ(key_of(o), "length_penalty");
  o.beam.length_penalty = INFINITY;
  EXPECT_EQ(key_of(o), "length_penalty");
  o = beam_options("t1", 5, 2, 1);
  o.num_samples = 2;
  EXPECT_EQ(key_of(o), "num_samples");
  auto bias_key = [&](const std::vector<std::string>& items) {
    try {
      lstmlm::tasks::LogitBias::parse(*model, items);
    } catch (const lstmlm::UsageError& e) {
      return e.key();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(bias_key({"t1=nan"}), "logit_bias");
  EXPECT_EQ(bias_key({"t1=inf"}), "logit_bias");
  EXPECT_EQ(bias_key({"t1=-inf"}), "logit_bias");
  EXPECT_EQ(bias_key({"nothere=1"}), "logit_bias");
  EXPECT_EQ(bias_key({"10=1"}), "logit_bias");  // ids are in [0, 10)
  EXPECT_EQ(bias_key({"t1"}), "logit_bias");
  EXPECT_EQ(bias_key({"t1=1", "9=-2.5"}), "accepted");
}

TEST(BeamSearch, BoostSteersTheSearch) {
  auto model = beam_model(30, -5.0f, 2);
  lstmlm::Engine engine(model, 1);
  auto o = beam_options("t1", 6, 3, 1);
  // t9 after t1 (the prompt's last token, then each generated t1): a phrase of the boost's.
  o.boost = std::make_shared<lstmlm::tasks::Boost>(
      lstmlm::tasks::Boost::parse(*model, {"t1 t9\t30", "t9 t1\t30"}, "b"));
  const auto ids = beam_search(engine, o).hypotheses.at(0).ids();
  ASSERT_EQ(ids.size(), 6u);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], i % 2 == 0 ? 9 : 1) << i;
}

TEST(Generate, StopStringsEndSamples) {
  auto model = beam_model(8, -5.0f, 6);
  lstmlm::Engine engine(model, 1);
  lstmlm::tasks::GenerateOptions o;
  o.prompt = "t1";
  o.max_tokens = 40;
  o.num_samples = 6;
  o.seed = 9;
  o.stop = {"t3 t4", "t6"};
  int stopped = 0;
  for (const auto& s : generate(engine, o).samples) {
    const std::string text = model->tokenizer().detokenize(s.ids());
    if (s.stopped_at.empty()) {
      EXPECT_EQ(s.tokens.size(), 40u) << text;
      continue;
    }
    ++stopped;
    EXPECT_TRUE(text.ends_with(s.stopped_at)) << text;
    // The first occurrence ends it: the text without its last token holds no stop string.
    auto ids = s.ids();
    ids.pop_back();
    const std::string before = model->tokenizer().detokenize(ids);
    EXPECT_EQ(before.find("t3 t4"), std::string::npos) << text;
    EXPECT_EQ(before.find("t6"), std::string::npos) << text;
  }
  EXPECT_GT(stopped, 0);
}

TEST(LogitBias, ShiftsTheRowAndRenormalizes) {
  auto model = beam_model(10, 0.0f, 1);
  auto b = lstmlm::tasks::LogitBias::parse(*model, {"t2=1.5", "3=-2", "t2=0.5"});
  ASSERT_EQ(b.entries().size(), 2u);
  EXPECT_EQ(b.entries()[0], std::make_pair(int32_t{2}, 2.0f));
  std::vector<float> row(10, std::log(0.1f));
  b.apply(row.data(), 10);
  // p_j proportional to 0.1 e^{b_j}: the sum is 0.8 + 0.1 e^2 + 0.1 e^-2.
  const double z = 0.8 + 0.1 * std::exp(2.0) + 0.1 * std::exp(-2.0);
  EXPECT_NEAR(row[2], std::log(0.1 * std::exp(2.0) / z), 1e-6);
  EXPECT_NEAR(row[3], std::log(0.1 * std::exp(-2.0) / z), 1e-6);
  EXPECT_NEAR(row[0], std::log(0.1 / z), 1e-6);
}

TEST(LogitBias, SteersSamplingAndBeamSearch) {
  auto model = beam_model(30, -5.0f, 2);
  lstmlm::Engine engine(model, 1);
  auto o = beam_options("t1", 10, 3, 1);
  const auto plain = beam_search(engine, o).hypotheses.at(0);
  o.bias = std::make_shared<lstmlm::tasks::LogitBias>(lstmlm::tasks::LogitBias::parse(*model, {"t7=30"}));
  const auto biased = beam_search(engine, o).hypotheses.at(0);
  EXPECT_NE(plain.ids(), biased.ids());
  for (int32_t id : biased.ids()) EXPECT_EQ(id, 7);
  // The reported log-probs stay the model's: the score is the biased one.
  EXPECT_GT(biased.score, biased.total_logprob);
  lstmlm::tasks::GenerateOptions g;
  g.prompt = "t1";
  g.max_tokens = 10;
  g.seed = 4;
  g.bias = o.bias;
  for (int32_t id : generate(engine, g).samples.at(0).ids()) EXPECT_EQ(id, 7);
}

// Random patterns over {a, b, c, ' '} and texts: the automaton agrees with std::regex's full match.
std::string random_pattern(std::mt19937_64& rng, int depth) {
  const char* atoms[] = {"a", "b", "c", " ", ".", "[ab]", "[^a]", "[a-c]", "\\s", "(?:ab|c)"};
  std::uniform_int_distribution<int> pick(0, 9), what(0, 9);
  std::string p;
  const int parts = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < parts; ++i) {
    std::string atom =
        depth > 0 && what(rng) < 3 ? "(" + random_pattern(rng, depth - 1) + ")" : atoms[pick(rng)];
    switch (what(rng)) {
      case 0:
        atom += "*";
        break;
      case 1:
        atom += "+";
        break;
      case 2:
        atom += "?";
        break;
      case 3:
        atom += "{1,3}";
        break;
      case 4:
        atom += "{2}";
        break;
      default:
        break;
    }
    p += atom;
  }
  if (depth > 0 && what(rng) < 2) p += "|" + random_pattern(rng, depth - 1);
  return p;
}

TEST(Regex, AgreesWithStdRegex) {
  std::mt19937_64 rng(42);
  const std::string alphabet = "abc ";
  for (int i = 0; i < 300; ++i) {
    const std::string p = random_pattern(rng, 2);
    lstmlm::tasks::detail::Dfa dfa(p);
    const std::regex re(p, std::regex::ECMAScript);
    for (int j = 0; j < 40; ++j) {
      std::string text;
      const size_t len = rng() % 8;
      for (size_t k = 0; k < len; ++k) text += alphabet[rng() % 4];
      EXPECT_EQ(dfa.matches(text), std::regex_match(text, re))
          << "pattern /" << p << "/ text \"" << text << "\"";
    }
  }
}

TEST(Regex, RefusesWhatItDoesNotCompile) {
  for (const char* bad :
       {"(ab", "ab)", "[ab", "a{2,1}", "a{1001}", "*a", "a\\q", "[b-a]", "[^\\x00-\\xff]", "a$b"}) {
    try {
      lstmlm::tasks::detail::Dfa d(bad);
      ADD_FAILURE() << "accepted /" << bad << "/";
    } catch (const lstmlm::UsageError& e) {
      EXPECT_EQ(e.key(), "regex") << bad;
    }
  }
  // Deep nesting is refused, never a stack overflow; a pattern too large to expand is refused too.
  for (const std::string& deep : {std::string(100000, '(') + "a" + std::string(100000, ')'),
                                  "a" + std::string(100000, '*'), std::string("((a{1000}){1000}){1000}")}) {
    try {
      lstmlm::tasks::detail::Dfa d(deep);
      ADD_FAILURE() << "accepted a pattern of " << deep.size() << " bytes";
    } catch (const lstmlm::UsageError& e) {
      EXPECT_EQ(e.key(), "regex");
    }
  }
  lstmlm::tasks::detail::Dfa anchored("^a+$");
  EXPECT_TRUE(anchored.matches("aa"));
  EXPECT_FALSE(anchored.matches(""));
}

lstmlm::tasks::GenerateOptions constrained(const lstmlm::Model& model, const std::string& regex, int n) {
  lstmlm::tasks::GenerateOptions o;
  o.prompt = "a";
  o.max_tokens = n;
  lstmlm::tasks::ConstraintSpec spec;
  spec.regex = regex;
  o.constraint = lstmlm::tasks::Constraint::create(model, spec, o.end_token(model));
  return o;
}

TEST(Constraint, EveryOutputMatchesARandomPattern) {
  auto model = beam_char_model(7);
  lstmlm::Engine engine(model, 1);
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int i = 0; i < 60; ++i) {
    const std::string p = random_pattern(rng, 1);
    const std::regex re(p, std::regex::ECMAScript);
    auto o = constrained(*model, p, 40);
    o.num_samples = 4;
    o.seed = static_cast<uint64_t>(i);
    try {
      for (const auto& s : generate(engine, o).samples) {
        const std::string text = model->tokenizer().detokenize(s.ids());
        EXPECT_TRUE(std::regex_match(text, re)) << "sample /" << p << "/ \"" << text << "\"";
        ++checked;
      }
    } catch (const lstmlm::UsageError& e) {
      // Only a pattern whose texts outgrow max_tokens may end a sample unmatched, and it says so.
      EXPECT_EQ(e.key(), "max_tokens") << p << ": " << e.what();
    }
    o.beam.beam_size = 4;
    o.beam.n_best = 4;
    o.num_samples = 1;
    try {
      for (const auto& h : beam_search(engine, o).hypotheses) {
        const std::string text = model->tokenizer().detokenize(h.ids());
        EXPECT_TRUE(std::regex_match(text, re)) << "beam /" << p << "/ \"" << text << "\"";
        ++checked;
      }
    } catch (const lstmlm::UsageError& e) {
      EXPECT_EQ(e.key(), "max_tokens") << p << ": " << e.what();
    }
  }
  EXPECT_GT(checked, 200);
}

TEST(Constraint, AnyStringChangesNothing) {
  auto model = beam_char_model(3);
  lstmlm::Engine engine(model, 1);
  lstmlm::tasks::GenerateOptions plain;
  plain.prompt = "a";
  plain.max_tokens = 30;
  plain.num_samples = 5;
  plain.seed = 11;
  plain.sampler.top_p = 0.9f;
  auto any = constrained(*model, "[\\s\\S]*", 30);
  any.num_samples = 5;
  any.seed = 11;
  any.sampler.top_p = 0.9f;
  const auto a = generate(engine, plain), b = generate(engine, any);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(a.samples[i].ids(), b.samples[i].ids());
    EXPECT_EQ(a.samples[i].total_logprob, b.samples[i].total_logprob);
  }
  plain.num_samples = any.num_samples = 1;
  plain.beam.beam_size = any.beam.beam_size = 6;
  plain.beam.n_best = any.beam.n_best = 6;
  EXPECT_EQ(beam_outs(beam_search(engine, plain)), beam_outs(beam_search(engine, any)));
}

TEST(Constraint, WordModelsJoinWithTheSeparator) {
  auto model = beam_model(20, 0.0f, 4);
  lstmlm::Engine engine(model, 1);
  auto o = constrained(*model, "t1( t[0-9]+)* t5", 12);
  o.beam.beam_size = 5;
  o.beam.n_best = 5;
  for (const auto& h : beam_search(engine, o).hypotheses) {
    const std::string text = model->tokenizer().detokenize(h.ids());
    EXPECT_TRUE(std::regex_match(text, std::regex("t1( t[0-9]+)* t5"))) << text;
    // The end is allowed once the pattern matches; the last step allowed takes only a token that matches.
    EXPECT_TRUE(h.stopped_at_eos || (h.tokens.size() == 12 && h.ids().back() == 5)) << text;
  }
}

TEST(Constraint, AllowedWordsAndDeadEnds) {
  auto model = beam_model(20, 0.0f, 4);
  lstmlm::Engine engine(model, 1);
  lstmlm::tasks::GenerateOptions o;
  o.prompt = "t1";
  o.max_tokens = 8;
  o.num_samples = 3;
  lstmlm::tasks::ConstraintSpec spec;
  spec.allowed = lstmlm::tasks::Constraint::allowed_ids(*model, {"t3", "t4", "zz", ""}, "list");
  o.constraint = lstmlm::tasks::Constraint::create(*model, spec, o.end_token(*model));
  for (const auto& s : generate(engine, o).samples)
    for (int32_t id : s.ids()) EXPECT_TRUE(id == 3 || id == 4 || id == 0) << id;
  try {
    lstmlm::tasks::Constraint::allowed_ids(*model, {"zz", "yy"}, "list");
    ADD_FAILURE() << "a list with no word of the vocabulary was accepted";
  } catch (const lstmlm::UsageError& e) {
    EXPECT_EQ(e.key(), "allowed_words");
  }
  // Only t3 allowed, and the pattern wants "t4": no token can start the text.
  spec.regex = "t4";
  spec.allowed = std::vector<int32_t>{3};
  o.constraint = lstmlm::tasks::Constraint::create(*model, spec, o.end_token(*model));
  for (int k : {0, 3}) {
    o.beam.beam_size = k;
    o.num_samples = k ? 1 : 3;
    try {
      k ? (void)beam_search(engine, o) : (void)generate(engine, o);
      ADD_FAILURE() << "a dead end was not refused";
    } catch (const lstmlm::UsageError& e) {
      EXPECT_EQ(e.key(), "regex");
      EXPECT_NE(std::string(e.what()).find("step 1"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
