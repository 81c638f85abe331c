// Engine: batched forward over variable-length rows. Rows are dealt to the pool's threads; each thread
// runs its rows through every layer and step on its own scratch buffers, so the only shared data is the
// immutable Model. A row's numbers never depend on which thread or tile computed it (kernels.hpp).
#include "lstmlm/engine.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>

#include "engine/thread_pool.hpp"
#include "kernels/kernels.hpp"
#include "kernels/packed.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm {

using detail::FloatBuf;
using detail::kPanel;
using detail::PackedLayer;
using detail::PackedWeights;

namespace {

enum class Mode { Advance, Score, Logprobs, Predict };

struct Job {
  Mode mode = Mode::Advance;
  const Sequences* inputs = nullptr;
  const Sequences* targets = nullptr;
  std::vector<State>* states = nullptr;
  std::vector<std::vector<float>>* scores = nullptr;
  std::vector<MatrixRM>* logprobs = nullptr;
  MatrixRM* predict = nullptr;
};

// Activation buffers are chunked in time so that scratch stays bounded whatever the sequence length.
constexpr size_t kGateBudget = size_t{1} << 20;   // floats of precomputed input gates per chunk
constexpr size_t kLogitBudget = size_t{1} << 20;  // floats of logits per decoder group

template <class V>
void grow(V& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

// Per-thread scratch, grow-only: sized once per batch shape, reused by every later call.
struct Work {
  FloatBuf c, hc, y0, y1, xg, m, zeros, logits;
  std::vector<const float*> pa, pi;
  std::vector<float*> po, pc;
  std::vector<int> rows, pr, ps;  // this thread's rows; decoder bookkeeping (row, step of each gathered h)
};

struct Engine::Impl {
  const Model& model;
  const PackedWeights& pw;
  detail::ThreadPool pool;
  std::vector<Work> work;
  std::vector<int> order;
  Sequences one_input;
  std::vector<State> one_state;
  MatrixRM one_out;

  Impl(const Model& m, int threads)
      : model(m), pw(m.packed()), pool(threads), work(static_cast<size_t>(threads)) {}

  void run(const Job& job);
  void forward(Work& w, const Job& job);
  void decode(Work& w, const Job& job, int count, const float* const* h, const int* row, const int* step);
};

namespace {

void check_states(const Model& model, const Sequences& inputs, const std::vector<State>& states) {
  if (states.size() != inputs.size())
    throw UsageError("engine: " + std::to_string(inputs.size()) + " input rows but " +
                     std::to_string(states.size()) + " states");
  const auto& layers = model.config().layers;
  for (size_t r = 0; r < states.size(); ++r) {
    const State& s = states[r];
    bool ok = s.h.size() == layers.size() && s.c.size() == layers.size();
    for (size_t k = 0; ok && k < layers.size(); ++k)
      ok = s.h[k].size() == size_t(layers[k].output_size()) && s.c[k].size() == size_t(layers[k].hidden_size);
    if (!ok)
      throw UsageError("engine: state of row " + std::to_string(r) +
                       " does not match the model's layer sizes");
  }
  const int32_t V = model.vocab_size();
  for (size_t r = 0; r < inputs.size(); ++r)
    for (size_t t = 0; t < inputs[r].size(); ++t)
      if (inputs[r][t] < 0 || inputs[r][t] >= V)
        throw InputError("engine: token id " + std::to_string(inputs[r][t]) + " (row " + std::to_string(r) +
                         ", step " + std::to_string(t) + ") is outside the vocabulary [0, " +
                         std::to_string(V) + ")");
}

// Every entry point: the inputs and states checked, then the job that runs them.
Job checked_job(const Model& model, Mode mode, const Sequences& inputs, std::vector<State>& states) {
  check_states(model, inputs, states);
  Job job;
  job.mode = mode;
  job.inputs = &inputs;
  job.states = &states;
  return job;
}

}  // namespace

void Engine::Impl::run(const Job& job) {
  const Sequences& in = *job.inputs;
  const size_t B = in.size();
  // Longest rows first: at step t the rows still running are a prefix of each thread's list.
  order.resize(B);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return in[size_t(a)].size() > in[size_t(b)].size(); });
  const int T = pool.size();
  for (auto& w : work) w.rows.clear();
  // Dealt round-robin: every thread gets a similar mix of lengths, still sorted longest first.
  for (size_t i = 0; i < B; ++i) work[i % size_t(T)].rows.push_back(order[i]);
  if (B < 2 || T == 1) {
    work[0].rows.assign(order.begin(), order.end());
    forward(work[0], job);
    return;
  }
  pool.run([&](int t) { forward(work[size_t(t)], job); });
}

// Runs the decoder over `count` hidden rows and hands each log-softmax to the job's sink.
void Engine::Impl::decode(Work& w, const Job& job, int count, const float* const* h, const int* row,
                          const int* step) {
  const int V = pw.V, Np = pw.decoder.Np;
  int group = static_cast<int>(std::clamp<size_t>(kLogitBudget / size_t(Np), 4, 256));
  grow(w.logits, size_t(group) * size_t(Np));
  grow(w.po, size_t(group));
  grow(w.pi, size_t(group));
  for (int g0 = 0; g0 < count; g0 += group) {
    int n = std::min(group, count - g0);
    for (int i = 0; i < n; ++i) {
      w.po[size_t(i)] = w.logits.data() + size_t(i) * size_t(Np);
      w.pi[size_t(i)] = pw.decoder_bias.data();
    }
    detail::gemm_rows(n, h + g0, w.pi.data(), w.po.data(), pw.decoder, 0, pw.decoder.panels());
    for (int i = 0; i < n; ++i) {
      const float* z = w.po[size_t(i)];
      float lse = detail::log_sum_exp(z, V);
      size_t r = size_t(row[g0 + i]);
      switch (job.mode) {
        case Mode::Score: {
          size_t t = size_t(step[g0 + i]);
          (*job.scores)[r][t] = z[(*job.targets)[r][t]] - lse;
          break;
        }
        case Mode::Logprobs:
          detail::subtract(z, lse, (*job.logprobs)[r].row(step[g0 + i]).data(), V);
          break;
        case Mode::Predict:
          detail::subtract(z, lse, job.predict->row(Eigen::Index(r)).data(), V);
          break;
        case Mode::Advance:
          break;
      }
    }
  }
}

void Engine::Impl::forward(Work& w, const Job& job) {
  const std::vector<int>& rows = w.rows;
  const int n = static_cast<int>(rows.size());
  if (n == 0) return;
  const Sequences& in = *job.inputs;
  std::vector<State>& states = *job.states;
  auto len = [&](int r) { return static_cast<int>(in[size_t(rows[size_t(r)])].size()); };
  const int L = static_cast<int>(pw.layers.size());
  const size_t S = size_t(pw.max_width), Gm = size_t(pw.max_gates), Hm = size_t(pw.max_hp);
  const int T = len(0);
  const bool per_step = job.mode == Mode::Score || job.mode == Mode::Logprobs;
  const int Tc = std::max(1, std::min(T, static_cast<int>(kGateBudget / (size_t(n) * Gm))));
  const size_t ns = size_t(n) * S;

  grow(w.c, size_t(L) * size_t(n) * Hm);
  grow(w.hc, size_t(L) * ns);
  grow(w.y0, size_t(Tc) * ns);
  grow(w.y1, size_t(Tc) * ns);
  grow(w.xg, size_t(Tc) * size_t(n) * Gm);
  grow(w.m, size_t(n) * Hm);
  grow(w.zeros, S);
  std::fill(w.zeros.begin(), w.zeros.end(), 0.0f);
  const size_t nptr = size_t(Tc) * size_t(n);
  grow(w.pa, nptr);
  grow(w.pi, nptr);
  grow(w.po, nptr);
  grow(w.pc, nptr);
  auto cst = [&](int l, int r) { return w.c.data() + (size_t(l) * size_t(n) + size_t(r)) * Hm; };
  auto hst = [&](int l, int r) { return w.hc.data() + (size_t(l) * size_t(n) + size_t(r)) * S; };

  // State in: real values, zero padding (padded units must start at 0 to stay 0).
  for (int r = 0; r < n; ++r) {
    const State& s = states[size_t(rows[size_t(r)])];
    for (int l = 0; l < L; ++l) {
      float* c = cst(l, r);
      float* h = hst(l, r);
      std::fill(c, c + Hm, 0.0f);
      std::fill(h, h + S, 0.0f);
      std::copy(s.c[size_t(l)].begin(), s.c[size_t(l)].end(), c);
      std::copy(s.h[size_t(l)].begin(), s.h[size_t(l)].end(), h);
    }
  }

  grow(w.pr, std::max(nptr, size_t(n)));
  grow(w.ps, std::max(nptr, size_t(n)));
  int* pr = w.pr.data();
  int* ps = w.ps.data();
  for (int t0 = 0; t0 < T; t0 += Tc) {
    const int t1 = std::min(T, t0 + Tc);
    auto active = [&](int t) {  // rows still running at step t (a prefix: rows are sorted by length)
      int a = n;
      while (a > 0 && len(a - 1) <= t) --a;
      return a;
    };
    float* yin = w.y0.data();
    float* yout = w.y1.data();
    auto yrow = [&](float* y, int t, int r) { return y + (size_t(t - t0) * size_t(n) + size_t(r)) * S; };
    auto xrow = [&](int t, int r) { return w.xg.data() + (size_t(t - t0) * size_t(n) + size_t(r)) * Gm; };
    for (int l = 0; l < L; ++l) {
      const PackedLayer& PL = pw.layers[size_t(l)];
      const bool gather = l == 0 && pw.use_table;
      if (!gather) {
        // One GEMM over every running (step, row) of the chunk: x W_ih^T + b.
        size_t cnt = 0;
        for (int t = t0; t < t1; ++t)
          for (int r = 0, a = active(t); r < a; ++r, ++cnt) {
            int tok = in[size_t(rows[size_t(r)])][size_t(t)];
            w.pa[cnt] = l == 0 ? pw.embedding + size_t(tok) * size_t(pw.E) : yrow(yin, t, r);
            w.pi[cnt] = PL.bias.data();
            w.po[cnt] = xrow(t, r);
          }
        detail::gemm_rows(int(cnt), w.pa.data(), w.pi.data(), w.po.data(), PL.w_ih, 0, PL.w_ih.panels());
      }
      for (int t = t0; t < t1; ++t) {
        const int a = active(t);
        for (int r = 0; r < a; ++r) {
          w.pa[size_t(r)] = t == t0 ? hst(l, r) : yrow(yout, t - 1, r);
          int tok = in[size_t(rows[size_t(r)])][size_t(t)];
          w.pi[size_t(r)] = gather ? pw.table.data() + size_t(tok) * size_t(PL.G) : xrow(t, r);
          w.pc[size_t(r)] = cst(l, r);
          w.po[size_t(r)] = PL.P > 0 ? w.m.data() + size_t(r) * Hm : yrow(yout, t, r);
        }
        detail::lstm_rows(a, w.pa.data(), w.pi.data(), w.pc.data(), w.po.data(), PL, 0, PL.w_hh.full);
        if (PL.P > 0) {
          // h = W_hr m: the gate pointers are free again, reuse them for the projection's operands.
          for (int r = 0; r < a; ++r) {
            w.pa[size_t(r)] = w.po[size_t(r)];
            w.pi[size_t(r)] = w.zeros.data();
            w.pc[size_t(r)] = yrow(yout, t, r);
          }
          detail::gemm_rows(a, w.pa.data(), w.pi.data(), w.pc.data(), PL.w_hr, 0, PL.w_hr.panels());
        }
      }
      // Carry each row's last output of this chunk into the next chunk (and the final state).
      for (int r = 0; r < n; ++r) {
        int last = std::min(len(r), t1) - 1;
        if (last >= t0) std::memcpy(hst(l, r), yrow(yout, last, r), S * sizeof(float));
      }
      std::swap(yin, yout);
    }
    if (per_step) {
      size_t cnt = 0;
      for (int t = t0; t < t1; ++t)
        for (int r = 0, a = active(t); r < a; ++r, ++cnt) {
          w.pa[cnt] = yrow(yin, t, r);
          pr[cnt] = rows[size_t(r)];
          ps[cnt] = t;
        }
      decode(w, job, int(cnt), w.pa.data(), pr, ps);
    }
  }

  // State out.
  for (int r = 0; r < n; ++r) {
    State& s = states[size_t(rows[size_t(r)])];
    for (int l = 0; l < L; ++l) {
      std::copy_n(cst(l, r), s.c[size_t(l)].size(), s.c[size_t(l)].begin());
      std::copy_n(hst(l, r), s.h[size_t(l)].size(), s.h[size_t(l)].begin());
    }
  }
  if (job.mode == Mode::Predict) {
    for (int r = 0; r < n; ++r) {
      w.pa[size_t(r)] = hst(L - 1, r);
      pr[size_t(r)] = rows[size_t(r)];
      ps[size_t(r)] = 0;
    }
    decode(w, job, n, w.pa.data(), pr, ps);
  }
}

Engine::Engine(std::shared_ptr<const Model> model, int threads) : model_(std::move(model)) {
  if (!model_) throw UsageError("engine: no model");
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  impl_ = std::make_unique<Impl>(*model_, threads);
}

Engine::~Engine() = default;

int Engine::threads() const { return impl_->pool.size(); }

void Engine::score(const Sequences& inputs, const Sequences& targets, std::vector<State>& states,
                   std::vector<std::vector<float>>& out) {
  Job job = checked_job(*model_, Mode::Score, inputs, states);
  check_states(*model_, targets, states);
  for (size_t r = 0; r < inputs.size(); ++r)
    if (targets[r].size() != inputs[r].size())
      throw UsageError("engine: row " + std::to_string(r) + " has " + std::to_string(inputs[r].size()) +
                       " inputs but " + std::to_string(targets[r].size()) + " targets");
  out.resize(inputs.size());
  for (size_t r = 0; r < inputs.size(); ++r) out[r].assign(inputs[r].size(), 0.0f);
  job.targets = &targets;
  job.scores = &out;
  impl_->run(job);
}

void Engine::predict(const Sequences& inputs, std::vector<State>& states, MatrixRM& out) {
  Job job = checked_job(*model_, Mode::Predict, inputs, states);
  out.resize(Eigen::Index(inputs.size()), model_->vocab_size());
  job.predict = &out;
  impl_->run(job);
}

void Engine::logprobs(const Sequences& inputs, std::vector<State>& states, std::vector<MatrixRM>& out) {
  Job job = checked_job(*model_, Mode::Logprobs, inputs, states);
  out.resize(inputs.size());
  for (size_t r = 0; r < inputs.size(); ++r)
    out[r].resize(Eigen::Index(inputs[r].size()), model_->vocab_size());
  job.logprobs = &out;
  impl_->run(job);
}

void Engine::advance(const Sequences& inputs, std::vector<State>& states) {
  impl_->run(checked_job(*model_, Mode::Advance, inputs, states));
}

void Engine::step(const State& in, int32_t token, State& out, std::vector<float>& logprobs) {
  Impl& m = *impl_;
  m.one_input.resize(1);
  m.one_input[0].assign(1, token);
  m.one_state.resize(1);
  m.one_state[0] = in;
  predict(m.one_input, m.one_state, m.one_out);
  out = m.one_state[0];
  logprobs.assign(m.one_out.data(), m.one_out.data() + m.one_out.cols());
}

}  // namespace lstmlm
