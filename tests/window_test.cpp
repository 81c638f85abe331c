// Fixed input windows (--pad-to N, --window N; include/lstmlm/tasks/window.hpp): every prediction equals the
// naive reference LSTM (tests/reference_lstm, float64) run from the zero state over the explicitly padded /
// truncated ids; the pad-prefix checkpoints give bit-identical numbers to the engine run over the whole
// padded row; batch size and thread count change nothing; and score / predict / generate use the window.
#include "lstmlm/tasks/window.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine_models.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "lstmlm/tasks/score.hpp"
#include "reference_lstm.hpp"

using namespace lstmlm;
using namespace lstmlm::tasks;
using namespace lstmlm::test;

namespace {

// The ids a Keras app feeds: the last n of ctx, pre-padded with `pad` to n (pad) or not (window).
std::vector<int32_t> explicit_window(const std::vector<int32_t>& ctx, size_t n, bool pad, int32_t pad_id) {
  std::vector<int32_t> ids(ctx.size() > n ? ctx.end() - static_cast<ptrdiff_t>(n) : ctx.begin(), ctx.end());
  if (pad) ids.insert(ids.begin(), n - ids.size(), pad_id);
  return ids;
}

std::vector<double> reference_next(const Model& m, const std::vector<int32_t>& ids) {
  RefState s = to_ref(State::zeros(m));
  if (ids.empty()) return reference_logprobs(m, s.h.back());
  return reference_forward(m, ids, s).back();
}

std::vector<std::vector<int32_t>> some_contexts(const Model& m, size_t n) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<int32_t>> out;
  for (size_t len : {size_t{0}, size_t{1}, size_t{2}, size_t{5}, n - 1, n, n + 1, n + 9})
    out.push_back(random_tokens(rng, m.vocab_size(), static_cast<int>(len)));
  return out;
}

std::vector<std::span<const int32_t>> spans(const std::vector<std::vector<int32_t>>& v) {
  return {v.begin(), v.end()};
}

bool same_rows(const MatrixRM& a, const MatrixRM& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && std::equal(a.data(), a.data() + a.size(), b.data());
}

}  // namespace

TEST(Window, PadToEqualsTheReferenceOverTheExplicitlyPaddedIds) {
  for (const auto& nm : test_models()) {
    SCOPED_TRACE(nm.name);
    const Model& m = *nm.model;
    Engine engine(nm.model, 1);
    for (int n : {1, 3, 37}) {
      SCOPED_TRACE(n);
      for (WindowMode mode : {WindowMode::Pad, WindowMode::Window}) {
        WindowedPredictor wp(engine, {mode, n}, 3);
        auto ctx = some_contexts(m, static_cast<size_t>(n));
        MatrixRM out;
        wp.predict(spans(ctx), out);
        ASSERT_EQ(out.rows(), static_cast<Eigen::Index>(ctx.size()));
        for (size_t i = 0; i < ctx.size(); ++i) {
          auto ref = reference_next(
              m, explicit_window(ctx[i], static_cast<size_t>(n), mode == WindowMode::Pad, window_pad_id(m)));
          double worst = 0;
          for (int v = 0; v < m.vocab_size(); ++v)
            worst =
                std::max(worst, std::abs(ref[static_cast<size_t>(v)] - out(static_cast<Eigen::Index>(i), v)));
          EXPECT_LT(worst, 1e-4) << "context " << i << " of length " << ctx[i].size();
        }
      }
    }
  }
}

TEST(Window, PadCheckpointsEqualTheNaiveRunBitForBit) {
  // N = 100 has a checkpoint per pad count (stride 1), N = 600 one every 3 pads (a row feeds 0 to 2 pads);
  // contexts of every length (N = 600: every 7th, and those around N) start from each of them.
  auto model = Model::random(50, 8, 12, 2, 3);
  Engine engine(model, 1);
  EXPECT_EQ(PadStates::stride_for(100), 1u);
  EXPECT_EQ(PadStates::stride_for(600), 3u);
  for (const int n : {100, 600}) {
    std::mt19937_64 rng(11);
    std::vector<std::vector<int32_t>> ctx;
    for (int len = 0; len <= n + 2; ++len)
      if (n == 100 || len % 7 == 0 || len >= n - 3) ctx.push_back(random_tokens(rng, 50, len));
    WindowedPredictor wp(engine, {WindowMode::Pad, n}, 64);
    MatrixRM out;
    wp.predict(spans(ctx), out);
    for (size_t i = 0; i < ctx.size(); ++i) {
      std::vector<State> st{State::zeros(*model)};
      MatrixRM naive;
      engine.predict(Sequences{explicit_window(ctx[i], n, true, window_pad_id(*model))}, st, naive);
      ASSERT_TRUE(
          std::equal(naive.data(), naive.data() + naive.size(), out.row(static_cast<Eigen::Index>(i)).data()))
          << "N " << n << ", context length " << ctx[i].size();
    }
  }
}

TEST(Window, SharedPadStatesGiveTheBitsOfAPredictorsOwn) {
  // One PadStates of N = 20 shared by predictors on two engines (1 and 2 threads), one context per call,
  // longest first (pads growing), so each call extends the chain the previous ones left: every row is the row
  // of a predictor of its own over all the contexts at once. A predictor of N = 300 (stride 2) given it makes
  // its own.
  auto model = Model::random(30, 6, 10, 1, 7);
  std::mt19937_64 rng(5);
  std::vector<std::vector<int32_t>> ctx;
  for (int len = 24; len >= 0; --len) ctx.push_back(random_tokens(rng, 30, len));
  auto shared = std::make_shared<PadStates>(*model, 20);
  for (const int n : {20, 300}) {
    Engine e1(model, 1), e2(model, 2);
    MatrixRM ref;
    WindowedPredictor own(e1, {WindowMode::Pad, n}, 64);
    own.predict(spans(ctx), ref);
    for (size_t i = 0; i < ctx.size(); ++i) {
      WindowedPredictor wp(i % 2 ? e2 : e1, {WindowMode::Pad, n}, 1, shared);
      MatrixRM one;
      wp.predict({std::span<const int32_t>(ctx[i])}, one);
      ASSERT_TRUE(
          std::equal(one.data(), one.data() + one.size(), ref.row(static_cast<Eigen::Index>(i)).data()))
          << "N " << n << ", context length " << ctx[i].size();
    }
  }
}

TEST(Window, SameNumbersWhateverTheBatchSizeAndThreads) {
  auto model = Model::random(40, 6, 10, 1, 5);
  std::mt19937_64 rng(13);
  std::vector<std::vector<int32_t>> ctx;
  for (int i = 0; i < 30; ++i) ctx.push_back(random_tokens(rng, 40, static_cast<int>(rng() % 50)));
  MatrixRM ref;
  {
    Engine e1(model, 1);
    WindowedPredictor wp(e1, {WindowMode::Pad, 33}, 1);
    wp.predict(spans(ctx), ref);
  }
  for (int threads : {1, 2})
    for (int bs : {1, 4, 64}) {
      Engine e(model, threads);
      WindowedPredictor wp(e, {WindowMode::Pad, 33}, bs);
      MatrixRM out;
      wp.predict(spans(ctx), out);
      EXPECT_TRUE(same_rows(ref, out)) << threads << " threads, batch " << bs;
      // One context at a time: the same rows.
      for (size_t i = 0; i < ctx.size(); i += 7) {
        MatrixRM one;
        wp.predict({std::span<const int32_t>(ctx[i])}, one);
        EXPECT_TRUE(
            std::equal(one.data(), one.data() + one.size(), ref.row(static_cast<Eigen::Index>(i)).data()));
      }
    }
}

TEST(Window, BadLengthsAreUsageErrors) {
  EXPECT_THROW(check_window({WindowMode::Pad, 0}), UsageError);
  EXPECT_THROW(check_window({WindowMode::Window, -3}), UsageError);
  EXPECT_THROW(check_window({WindowMode::Pad, kMaxWindowLength + 1}), UsageError);
  EXPECT_NO_THROW(check_window({WindowMode::Stateful, 0}));
  auto model = Model::random(10, 4, 4, 1, 1);
  Engine engine(model, 1);
  EXPECT_THROW(WindowedPredictor(engine, {WindowMode::Stateful, 5}), UsageError);
}

TEST(Window, ScoreSentenceAndDocumentModesUseTheWindow) {
  // Model::random has no bos/eos: the first token of a line (sentence mode) or of the stream (document
  // mode) is context only; every other token t is predicted from the window of the tokens before it.
  auto model = Model::random(30, 5, 7, 1, 9);
  Engine engine(model, 1);
  const int n = 4;
  std::vector<std::string> lines = {"t1 t2 t3 t4 t5 t6 t7", "t9", "", "t3 t3"};
  std::vector<std::vector<int32_t>> ids = {{1, 2, 3, 4, 5, 6, 7}, {9}, {}, {3, 3}};
  for (ContextMode cm : {ContextMode::Sentence, ContextMode::Document}) {
    ScoreOptions o;
    o.context = cm;
    o.window = {WindowMode::Pad, n};
    o.batch_size = 2;
    Scorer scorer(engine, o);
    auto got = scorer.score(lines, "test", 1);
    std::vector<int32_t> stream;
    bool first = true;
    for (size_t l = 0; l < lines.size(); ++l) {
      if (cm == ContextMode::Sentence) stream.clear(), first = true;
      size_t w = 0;
      for (int32_t id : ids[l]) {
        const WordScore& ws = got[l].words[w++];
        ASSERT_EQ(ws.id, id);
        if (first) {
          EXPECT_FALSE(ws.scored);
          first = false;
        } else {
          auto ref = reference_next(*model, explicit_window(stream, n, true, 0));
          EXPECT_NEAR(ws.logprob, ref[static_cast<size_t>(id)], 1e-4) << "line " << l << " word " << w;
        }
        stream.push_back(id);
      }
    }
  }
}

TEST(Window, PredictAndGenerateUseTheWindow) {
  auto model = Model::random(30, 5, 7, 1, 21);
  Engine engine(model, 1);
  PredictOptions po;
  po.top = 0;
  po.window = {WindowMode::Pad, 3};
  auto p = predict(engine, {"t1 t2 t3 t4 t5", "t6"}, po, "test", 1);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].ids, (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(p[0].pads, 0u);
  EXPECT_EQ(p[1].ids, (std::vector<int32_t>{6}));
  EXPECT_EQ(p[1].pads, 2u);
  auto ref = reference_next(*model, {0, 0, 6});
  for (const auto& c : p[1].top) EXPECT_NEAR(c.logprob, ref[static_cast<size_t>(c.id)], 1e-4);

  // Greedy generation: each token is the argmax of the reference over the window of prompt + generated.
  tasks::GenerateOptions go;
  go.prompt = "t1 t2";
  go.max_tokens = 6;
  go.sampler.temperature = 0;
  go.window = {WindowMode::Pad, 4};
  auto r = generate(engine, go);
  std::vector<int32_t> ctx = {1, 2};
  for (const auto& t : r.samples[0].tokens) {
    auto lp = reference_next(*model, explicit_window(ctx, 4, true, 0));
    auto best = static_cast<int32_t>(std::max_element(lp.begin(), lp.end()) - lp.begin());
    EXPECT_EQ(t.id, best);
    EXPECT_NEAR(t.logprob, lp[static_cast<size_t>(best)], 1e-4);
    ctx.push_back(t.id);
  }
  // Samples of a batch equal the sample generated alone (per-sample seed streams, windowed too).
  go.sampler.temperature = 1;
  go.seed = 5;
  go.num_samples = 3;
  auto three = generate(engine, go);
  for (int i = 0; i < 3; ++i) {
    tasks::GenerateOptions one = go;
    one.num_samples = i + 1;
    auto alone = generate(engine, one);
    EXPECT_EQ(alone.samples[static_cast<size_t>(i)].ids(), three.samples[static_cast<size_t>(i)].ids());
  }
}

TEST(Window, OovWordsInPredictAndGenerateFollowScoresRule) {
  auto model = Model::random(30, 5, 7, 1, 21);  // no unk_token
  Engine engine(model, 1);
  PredictOptions po;
  po.top = 1;
  auto p = predict(engine, {"t1 zz t2"}, po, "test", 1);
  EXPECT_EQ(p[0].ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(p[0].skipped, (std::vector<std::string>{"zz"}));
  po.oov = OovPolicy::Error;
  EXPECT_THROW(predict(engine, {"t1 zz t2"}, po, "test", 1), InputError);

  tasks::GenerateOptions go;
  go.prompt = "t1 zz t2";
  go.max_tokens = 1;
  go.sampler.temperature = 0;
  auto pr = tasks::prompt_context(*model, go.prompt);
  EXPECT_EQ(pr.context, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(pr.skipped, (std::vector<std::string>{"zz"}));
  EXPECT_THROW(tasks::prompt_context(*model, go.prompt, OovPolicy::Error), InputError);
  // The lowercase hint: a lowercase-only vocabulary, no lowercasing, a word with an uppercase letter.
  try {
    tasks::prompt_context(*model, "T1", OovPolicy::Error);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("lowercase-only: reconvert with lstmlm-convert --lowercase"),
              std::string::npos)
        << e.message();
  }
}
