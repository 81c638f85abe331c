// The forward pass of one thread's rows. Activations are chunked in time so that scratch stays bounded
// whatever the sequence length; within a chunk each layer runs over every step before the next layer
// starts, so a layer's input terms are one GEMM over the whole chunk.
#include "engine/forward.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "engine/measures.hpp"

namespace lstmlm::engine {

namespace {

constexpr size_t kTermBudget = size_t{1} << 20;   // floats of precomputed input terms per chunk
constexpr size_t kLogitBudget = size_t{1} << 20;  // floats of logits per decoder group
constexpr int kAlign = 16;                        // floats: activation rows start on a 64-byte boundary

template <class V>
void grow(V& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

int round_up(int n, int m) { return (n + m - 1) / m * m; }

class Forward {
 public:
  Forward(const PackedModel& pm, Work& w, const Job& job, const Split& split)
      : pm_(pm), w_(w), job_(job), split_(split), in_(*job.inputs), n_(static_cast<int>(w.rows.size())) {
    L_ = static_cast<int>(pm.layers.size());
    for (const auto& l : pm.layers) {
      out_stride_ = std::max(out_stride_, round_up(l->output_stride(), kAlign));
      mem_stride_ = std::max(mem_stride_, round_up(std::max(l->memory_stride(), 1), kAlign));
      term_stride_ = std::max(term_stride_, l->term_width());
    }
    T_ = len(0);
    chunk_ = std::max(1, std::min(T_, static_cast<int>(kTermBudget / (size_t(n_) * size_t(term_stride_)))));
  }

  void run() {
    allocate();
    load_states();
    const bool per_step = job_.mode == Mode::Score || job_.mode == Mode::Logprobs;
    for (int t0 = 0; t0 < T_; t0 += chunk_) {
      const int t1 = std::min(T_, t0 + chunk_);
      float* layer_in = w_.out_a.data();
      float* layer_out = w_.out_b.data();
      for (int l = 0; l < L_; ++l) {
        if (l > 0 || !pm_.folded()) input_terms(l, t0, t1, layer_in);
        recurrent_steps(l, t0, t1, layer_out);
        carry_last_outputs(l, t0, t1, layer_out);
        std::swap(layer_in, layer_out);
      }
      if (per_step) decode_chunk(t0, t1, layer_in);
    }
    store_states();
    if (job_.mode == Mode::Predict) decode_last();
  }

 private:
  // Whether an operation streaming `bytes` of weights is split across the team.
  bool split(size_t bytes) const { return split_.team != nullptr && bytes >= split_.min_bytes; }
  int len(int r) const { return static_cast<int>(in_[size_t(w_.rows[size_t(r)])].size()); }
  int32_t token(int r, int t) const { return in_[size_t(w_.rows[size_t(r)])][size_t(t)]; }
  // Rows still running at step t: a prefix, since rows are sorted by length.
  int active(int t) const {
    int a = n_;
    while (a > 0 && len(a - 1) <= t) --a;
    return a;
  }
  float* memory(int l, int r) {
    return w_.memory.data() + (size_t(l) * size_t(n_) + size_t(r)) * size_t(mem_stride_);
  }
  float* last_h(int l, int r) {
    return w_.last_h.data() + (size_t(l) * size_t(n_) + size_t(r)) * size_t(out_stride_);
  }
  float* at(float* y, int t0, int t, int r) const {
    return y + (size_t(t - t0) * size_t(n_) + size_t(r)) * size_t(out_stride_);
  }
  float* term(int t0, int t, int r) {
    return w_.terms.data() + (size_t(t - t0) * size_t(n_) + size_t(r)) * size_t(term_stride_);
  }

  void allocate() {
    const size_t n = size_t(n_), L = size_t(L_), steps = size_t(chunk_) * n;
    grow(w_.memory, L * n * size_t(mem_stride_));
    grow(w_.last_h, L * n * size_t(out_stride_));
    grow(w_.out_a, steps * size_t(out_stride_));
    grow(w_.out_b, steps * size_t(out_stride_));
    grow(w_.terms, steps * size_t(term_stride_));
    const size_t ptrs = std::max(steps, n);
    grow(w_.x_rows, ptrs);
    grow(w_.h_rows, ptrs);
    grow(w_.term_rows, ptrs);
    grow(w_.out_rows, ptrs);
    grow(w_.mem_rows, ptrs);
    grow(w_.dec_row, ptrs);
    grow(w_.dec_step, ptrs);
  }

  // The callers' states into the buffers, zero-padded (padding is never read, but stays defined).
  void load_states() {
    for (int r = 0; r < n_; ++r) {
      const State& s = (*job_.states)[size_t(w_.rows[size_t(r)])];
      for (int l = 0; l < L_; ++l) {
        float* c = memory(l, r);
        float* h = last_h(l, r);
        std::fill(c, c + mem_stride_, 0.0f);
        std::fill(h, h + out_stride_, 0.0f);
        std::copy(s.c[size_t(l)].begin(), s.c[size_t(l)].end(), c);
        std::copy(s.h[size_t(l)].begin(), s.h[size_t(l)].end(), h);
      }
    }
  }

  // One GEMM over every running (step, row) of the chunk: the layer's input term from its input rows
  // (layer 0: the embedding rows of the tokens; deeper layers: the layer below's outputs).
  void input_terms(int l, int t0, int t1, float* layer_in) {
    size_t cnt = 0;
    const size_t E = size_t(pm_.embedding_dim);
    for (int t = t0; t < t1; ++t)
      for (int r = 0, a = active(t); r < a; ++r, ++cnt) {
        w_.x_rows[cnt] = l == 0 ? pm_.embedding + size_t(token(r, t)) * E : at(layer_in, t0, t, r);
        w_.out_rows[cnt] = term(t0, t, r);
      }
    const auto& layer = *pm_.layers[size_t(l)];
    if (!split(layer.term_bytes())) {
      layer.input_term(int(cnt), w_.x_rows.data(), w_.out_rows.data(), w_.scratch);
      return;
    }
    Team& team = *split_.team;
    team.run([&](int part) {
      layer.input_term_part(part, team.size(), int(cnt), w_.x_rows.data(), w_.out_rows.data(),
                            team.scratch(part));
    });
  }

  // Each step in up to two calls: the rows with an h_prev, then (in the first step of a call only) the
  // rows whose state's h is zero, a reset state, as every line scored on its own starts. Those pass no
  // h_prev (RecurrentLayer::step), so the layer can skip their recurrent product: a quarter of it at
  // bench's SEED score (4 tokens per row). Each row's pointers stay together, so the order is free.
  void recurrent_steps(int l, int t0, int t1, float* layer_out) {
    const auto& layer = *pm_.layers[size_t(l)];
    const bool folded = l == 0 && pm_.folded();
    const bool split_steps = split(layer.step_bytes());
    if (split_steps) mid_rows(layer.mid_stride());
    for (int t = t0; t < t1; ++t) {
      const int a = active(t);
      int with_h = 0, zero = a;  // rows [0, with_h) have an h_prev, [zero, a) have none
      for (int r = 0; r < a; ++r) {
        const float* h = t == t0 ? last_h(l, r) : at(layer_out, t0, t - 1, r);
        const size_t i = size_t(t == 0 && is_zero(h, layer.output_width()) ? --zero : with_h++);
        w_.h_rows[i] = h;
        w_.term_rows[i] = folded ? pm_.table_row(token(r, t)) : term(t0, t, r);
        w_.mem_rows[i] = memory(l, r);
        w_.out_rows[i] = at(layer_out, t0, t, r);
      }
      step(layer, split_steps, 0, with_h, false);
      step(layer, split_steps, zero, a - zero, true);
    }
  }

  // Rows [first, first + n) of the step's pointer arrays; zero_h: they have no h_prev.
  void step(const kernels::RecurrentLayer& layer, bool split_steps, int first, int n, bool zero_h) {
    if (n == 0) return;
    const size_t f = size_t(first);
    const float* const* h = zero_h ? nullptr : w_.h_rows.data() + f;
    const float* const* term = w_.term_rows.data() + f;
    float* const* mem = w_.mem_rows.data() + f;
    float* const* out = w_.out_rows.data() + f;
    if (!split_steps) {
      layer.step(n, h, term, mem, out, w_.scratch);
      return;
    }
    Team& team = *split_.team;
    for (int phase = 0; phase < layer.step_phases(); ++phase)
      team.run([&](int part) {
        layer.step_part(phase, part, team.size(), n, h, term, mem, out, w_.mid_rows.data() + f,
                        team.scratch(part));
      });
  }

  static bool is_zero(const float* h, int n) {
    for (int i = 0; i < n; ++i)
      if (h[i] != 0.0f) return false;
    return true;
  }

  // A split step's rows between its phases, one per row of this thread.
  void mid_rows(int width) {
    const size_t stride = size_t(round_up(std::max(width, 1), kAlign));
    grow(w_.mid, size_t(n_) * stride);
    grow(w_.mid_rows, size_t(n_));
    for (size_t r = 0; r < size_t(n_); ++r) w_.mid_rows[r] = w_.mid.data() + r * stride;
  }

  // Each row's last output of this chunk becomes its h for the next chunk (and the final state).
  void carry_last_outputs(int l, int t0, int t1, float* layer_out) {
    for (int r = 0; r < n_; ++r) {
      const int last = std::min(len(r), t1) - 1;
      if (last >= t0)
        std::memcpy(last_h(l, r), at(layer_out, t0, last, r), size_t(out_stride_) * sizeof(float));
    }
  }

  void decode_chunk(int t0, int t1, float* top) {
    size_t cnt = 0;
    for (int t = t0; t < t1; ++t)
      for (int r = 0, a = active(t); r < a; ++r, ++cnt) {
        w_.x_rows[cnt] = at(top, t0, t, r);
        w_.dec_row[cnt] = w_.rows[size_t(r)];
        w_.dec_step[cnt] = t;
        if (auto* out = job_.measures.top) {  // this thread's own rows only
          const size_t width = size_t(pm_.layers.back()->output_width());
          std::copy_n(w_.x_rows[cnt], width,
                      (*out)[size_t(w_.rows[size_t(r)])].begin() + ptrdiff_t(size_t(t) * width));
        }
      }
    if (job_.mode == Mode::Score && job_.measures.logits && !job_.measures.rank)
      decode_targets(int(cnt));
    else
      decode(int(cnt));
  }

  // Score mode without a normaliser: each decoded row's target logit alone, from the target's weights.
  void decode_targets(int count) {
    const auto& dec = *pm_.decoder;
    const float* const* x = w_.x_rows.data();
    if (!pm_.head.empty()) {
      apply_head(pm_.head, count, x, w_.head, w_.head_rows);
      x = w_.head_rows.data();
    }
    for (int d = 0; d < count; ++d) {
      const size_t r = size_t(w_.dec_row[size_t(d)]);
      const size_t t = size_t(w_.dec_step[size_t(d)]);
      const int32_t target = (*job_.targets)[r][t];
      (*job_.scores)[r][t] = target >= dec.width() ? std::numeric_limits<float>::quiet_NaN()
                                                   : dec.logit(x[d], target, w_.scratch);
    }
  }

  void store_states() {
    for (int r = 0; r < n_; ++r) {
      State& s = (*job_.states)[size_t(w_.rows[size_t(r)])];
      for (int l = 0; l < L_; ++l) {
        std::copy_n(memory(l, r), s.c[size_t(l)].size(), s.c[size_t(l)].begin());
        std::copy_n(last_h(l, r), s.h[size_t(l)].size(), s.h[size_t(l)].begin());
      }
    }
  }

  void decode_last() {
    for (int r = 0; r < n_; ++r) {
      w_.x_rows[size_t(r)] = last_h(L_ - 1, r);
      w_.dec_row[size_t(r)] = w_.rows[size_t(r)];
      w_.dec_step[size_t(r)] = 0;
    }
    decode(n_);
  }

  // The decoder over w_.x_rows[0..count), in groups of bounded logits; each log-softmax row goes to the
  // job's sink.
  void decode(int count) {
    const auto& dec = *pm_.decoder;
    const int stride = dec.stride();
    // No more rows than this call decodes: a keyboard's one row needs V floats, not 256 x V.
    const int group = std::min(std::max(count, 1),
                               static_cast<int>(std::clamp<size_t>(kLogitBudget / size_t(stride), 4, 256)));
    grow(w_.logits, size_t(group) * size_t(stride));
    std::vector<float*>& out = w_.out_rows;  // free during decoding
    for (int g0 = 0; g0 < count; g0 += group) {
      const int n = std::min(group, count - g0);
      for (int i = 0; i < n; ++i) out[size_t(i)] = w_.logits.data() + size_t(i) * size_t(stride);
      const float* const* x = w_.x_rows.data() + g0;
      if (!pm_.head.empty()) {
        apply_head(pm_.head, n, x, w_.head, w_.head_rows);
        x = w_.head_rows.data();
      }
      // Split: the log-softmax rows too, dealt to the team (each row computed the same way by any thread);
      // on the calling thread alone they held MEDIUM int8 batch 8 at 1.37x on 2 threads.
      if (split(dec.bytes())) {
        Team& team = *split_.team;
        team.run([&](int part) { dec.logits_part(part, team.size(), n, x, out.data(), team.scratch(part)); });
        team.run([&](int part) {
          for (int i = part; i < n; i += team.size()) finish_row(dec, out[size_t(i)], g0 + i);
        });
      } else {
        dec.logits(n, x, out.data(), w_.scratch);
        for (int i = 0; i < n; ++i) finish_row(dec, out[size_t(i)], g0 + i);
      }
    }
  }

  // Decoded row d's logits z: its log-probabilities (or score, entropy, rank) into the job's sink.
  void finish_row(const kernels::OutputLayer& dec, const float* z, int d) const {
    const int V = dec.width();
    if (job_.mode == Mode::Predict && job_.predict_logits) {
      std::copy_n(z, V, job_.predict->row(Eigen::Index(w_.dec_row[size_t(d)])).data());
      return;
    }
    const kernels::LogSumExp lse = dec.log_sum_exp(z);
    const size_t r = size_t(w_.dec_row[size_t(d)]);
    const int t = w_.dec_step[size_t(d)];
    switch (job_.mode) {
      case Mode::Score: {
        const int32_t target = (*job_.targets)[r][size_t(t)];
        if (target >= V) {  // an out-of-vocabulary word fed as the zero input: not scored
          (*job_.scores)[r][size_t(t)] = std::numeric_limits<float>::quiet_NaN();
          break;
        }
        (*job_.scores)[r][size_t(t)] = job_.measures.logits ? z[target] : lse.log_prob(z[target]);
        if (auto* e = job_.measures.entropy) (*e)[r][size_t(t)] = entropy_nats(z, lse.max, lse.log_sum, V);
        if (auto* k = job_.measures.rank) (*k)[r][size_t(t)] = rank_of(z, z[target], V);
        break;
      }
      case Mode::Logprobs:
        log_softmax(z, lse, (*job_.logprobs)[r].row(t).data(), V);
        break;
      case Mode::Predict:
        log_softmax(z, lse, job_.predict->row(Eigen::Index(r)).data(), V);
        break;
      case Mode::Advance:
        break;
    }
  }

  static void log_softmax(const float* z, kernels::LogSumExp lse, float* out, int n) {
    for (int j = 0; j < n; ++j) out[j] = lse.log_prob(z[j]);
  }

  const PackedModel& pm_;
  Work& w_;
  const Job& job_;
  const Split split_;
  const Sequences& in_;
  const int n_;
  int L_ = 0, T_ = 0, chunk_ = 1;
  int out_stride_ = kAlign, mem_stride_ = kAlign, term_stride_ = 1;
};

}  // namespace

void forward(const PackedModel& pm, Work& w, const Job& job, const Split& split) {
  if (w.rows.empty()) return;
  Forward(pm, w, job, split).run();
}

}  // namespace lstmlm::engine
