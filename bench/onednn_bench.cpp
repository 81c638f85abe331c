// oneDNN side of bench/compare: the same workloads as `lstmlm bench` and bench/torch_bench.py, fp32, bf16
// or int8 (--precision, below), on random weights of a shape, with oneDNN's primitives (Debian
// libdnnl-dev 2.x, the v2 "desc" API).
//
//   g++ -O2 -std=c++17 -Wall -Wextra bench/onednn_bench.cpp -o onednn_bench -ldnnl -fopenmp
//   onednn_bench --shape 554,100,100,1 -w score,predict,generate -b 1,256 -s 4 -t 1,2 [--precision bf16]
//
// Per call, B rows of T tokens (tokens/call = B*T, as in the other two sides):
//   embedding  a plain gather loop, table [V, E] -> src_layer [T, B, E] (tnc)
//   GRU        with --cell gru: lbr_gru_forward (the linear-before-reset GRU, PyTorch's nn.GRU and lstmlm's
//              reset_after), fp32 only, in place of the LSTM below; its state is h alone
//   LSTM       one lstm_forward primitive (forward_inference, unidirectional, all L layers in one
//              primitive; when L > 1 and E != H oneDNN needs the same input width in every layer, so
//              layer 0 is one primitive and layers 1..L-1 another). Weights are created as ldigo and
//              reordered once into the layout the primitive asks for (format_tag::any).
//   projection one matmul primitive [M, H] x [H, V] + bias, weights in the layout it asks for
//   score      M = T*B rows, then logsoftmax_forward (oneDNN primitive, in place) over V, then the
//              target's log-prob gathered per token (plain loop, summed)
//   predict    M = B rows: the last step's hidden state only, then logsoftmax_forward
//   generate   T steps; each step runs the LSTM primitive with T = 1 and the state carried
//              (src_iter/src_iter_c -> dst_iter/dst_iter_c, ping-pong between two buffers, the
//              first step from zeros), the matmul on B rows, softmax_forward (oneDNN primitive: the
//              probabilities, which sampling needs; PyTorch's side computes exp(log_softmax)), then
//              per row one uniform draw u in [0,1) and a cumulative-sum scan up to u (the last
//              token if rounding leaves the sum short of u); the drawn token is the next input.
// Primitives are created, weights reordered and memory allocated outside the timed region; the
// timed region is the call above. Each repetition repeats the call for at least --min-time seconds;
// tokens/s is reported as median, min and max over repetitions (the spread), mean and sd too.
// Threads: Debian's libdnnl is built with OpenMP (libgomp); the count is set with
// omp_set_num_threads before the primitives of a cell are created.
// Precision (--precision, recorded in the row's "precision" and "precision_detail"):
//   fp32  everything above in f32 (the default).
//   bf16  the embedding table (converted once, round to nearest even), src_layer, dst_layer, the LSTM
//         weights and the hidden state h are bf16; bias f32, the cell state c f32 (bf16 only if this
//         oneDNN refuses f32 there; the row says which), the LSTM accumulates in f32. The matmul takes the
//         LSTM's bf16 output and bf16 weights, f32 bias, f32 accumulation and f32 dst; the (log-)softmax is
//         f32 as in fp32. "impl" says which kernels ran: the matmul's name carries its ISA
//         ("brg:avx512_core_amx_bf16" when AMX ran, "brg:avx512_core_bf16" without it); oneDNN 2.x names
//         its LSTM only "brgemm" (no ISA), so for the LSTM the row's "isa" (get_effective_cpu_isa, the
//         highest ISA oneDNN may dispatch) is all that is known.
//   int8  oneDNN's int8 LSTM, which is static quantization: u8 activations x_u8 = x * 127 + 128 (one
//         data scale and shift for src_layer, h and dst_layer, set with rnn_data_qparams; fixed for h in
//         (-1, 1), not calibrated on data, which random weights don't have), s8 weights with one scale
//         (127 / 0.1, the weights' range) set with rnn_weights_qparams on the primitive and on the
//         weight reorders (which also compute oneDNN's compensation), f32 bias and cell state, the u8
//         hidden output taken by a u8 x s8 matmul with the src zero point 128, output scale
//         1 / (127 * 1270) and the bias pre-multiplied by 127 * 1270 (oneDNN 2.x adds an int8 matmul's
//         bias before the output scale); f32 dst and (log-)softmax. The embedding table is quantized
//         once with the data scale. Unlike PyTorch's quantize_dynamic (activation scales computed per
//         call) nothing is measured per call, which favours oneDNN slightly; on random weights the
//         score checksum stays within about 1% of fp32.
// Output: one JSON object per cell (jsonl), with the keys of bench/torch_bench.py and "peer":
// "onednn"; "impl" names the implementations oneDNN dispatched (primitive_desc::impl_info_str()).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
using dims = memory::dims;

namespace {

struct Rng {  // splitmix64
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  float weight() { return static_cast<float>(uniform() * 0.2 - 0.1); }
};

std::vector<int> ints(const std::string& s) {
  std::vector<int> v;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    v.push_back(std::atoi(s.substr(i, j - i).c_str()));
    i = j + 1;
  }
  return v;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> v;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    v.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return v;
}

double percentile(std::vector<double> xs, double p) {
  std::sort(xs.begin(), xs.end());
  double pos = p / 100 * static_cast<double>(xs.size() - 1);
  size_t lo = static_cast<size_t>(pos), hi = std::min(lo + 1, xs.size() - 1);
  return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo);
}

uint16_t to_bf16(float f) {  // round to nearest even (the weights are finite)
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

size_t bytes_of(dt t) { return t == dt::bf16 ? 2 : t == dt::u8 || t == dt::s8 ? 1 : 4; }

// int8: static quantization. Activations (the embedding rows, h) u8 = round(x * kDataScale + kDataShift),
// h in (-1, 1) -> [1, 255]; weights s8 = round(w * kWeightScale), one scale per tensor (the random
// weights are in [-0.1, 0.1)). Fixed here, not calibrated (see the comment at the top).
constexpr float kDataScale = 127.f, kDataShift = 128.f, kWeightScale = 127.f / 0.1f;

uint8_t to_u8(float x) {
  return static_cast<uint8_t>(std::min(255.f, std::max(0.f, std::nearbyint(x * kDataScale + kDataShift))));
}

dt weights_type(dt data) { return data == dt::u8 ? dt::s8 : data; }

std::vector<float> random_floats(size_t n, Rng& rng) {
  std::vector<float> v(n);
  for (auto& x : v) x = rng.weight();
  return v;
}

// The weights of the model in oneDNN's user layouts (ldigo, ldgo, [H, V]).
struct Weights {
  int V, E, H, L;
  bool gru = false;  // --cell gru: the recurrent layers are LBR GRUs (3 gates of the 4 generated, 4 biases)
  std::vector<float> embedding;                           // [V, E]
  std::vector<uint16_t> embedding_bf16;                   // [V, E], the same rounded to bf16
  std::vector<uint8_t> embedding_u8;                      // [V, E], the same quantized (int8)
  std::vector<std::vector<float>> w_layer, w_iter, bias;  // per layer: [in, 4, H], [H, 4, H], [4, H]
  std::vector<float> w_out, b_out;                        // [H, V], [V]
  Weights(int V_, int E_, int H_, int L_, uint64_t seed) : V(V_), E(E_), H(H_), L(L_) {
    Rng rng{seed};
    embedding = random_floats(size_t(V) * E, rng);
    for (int l = 0; l < L; ++l) {
      int in = l == 0 ? E : H;
      w_layer.push_back(random_floats(size_t(in) * 4 * H, rng));
      w_iter.push_back(random_floats(size_t(H) * 4 * H, rng));
      bias.push_back(random_floats(size_t(4) * H, rng));
    }
    w_out = random_floats(size_t(H) * V, rng);
    b_out = random_floats(size_t(V), rng);
    embedding_bf16.resize(embedding.size());
    embedding_u8.resize(embedding.size());
    for (size_t i = 0; i < embedding.size(); ++i) {
      embedding_bf16[i] = to_bf16(embedding[i]);
      embedding_u8[i] = to_u8(embedding[i]);
    }
  }
};

// A memory in the layout a primitive asked for, filled by a reorder from a user buffer (once).
memory reordered(const engine& eng, stream& s, const memory::desc& want, const dims& d, tag user_tag,
                 const float* data, const primitive_attr& attr = primitive_attr()) {
  memory user({d, dt::f32, user_tag}, eng, const_cast<float*>(data));
  memory m(want, eng);
  reorder(user, m, attr).execute(s, user, m);
  s.wait();
  return m;
}

// L layers of LSTM over T steps for B rows: one primitive, or two when L > 1 and E != H.
struct Lstm {
  struct Group {
    int first, layers, in;
    primitive prim;
    memory w_layer, w_iter, bias;
    std::string impl;
  };
  std::vector<Group> groups;
  int T, B, H, L;
  bool with_state, gru;
  dt data, cdt;            // src/dst layer, h state and weights; the c state
  std::vector<float> mid;  // [T, B, H] between the two groups (sized for f32, holds bf16 too)

  Lstm(const engine& eng, stream& s, const Weights& w, int T_, int B_, bool with_state_, dt data_)
      : T(T_), B(B_), H(w.H), L(w.L), with_state(with_state_), gru(w.gru), data(data_), cdt(dt::f32) {
    try {
      build(eng, s, w);
    } catch (const dnnl::error&) {
      if (data != dt::bf16 || !with_state) throw;
      groups.clear();
      cdt = dt::bf16;  // this oneDNN wants the cell state in bf16 too
      build(eng, s, w);
    }
    if (groups.size() > 1) mid.resize(size_t(T) * B * H);
  }

  void build(const engine& eng, stream& s, const Weights& w) {
    std::vector<std::pair<int, int>> split;  // (first layer, layers)
    if (w.L == 1 || w.E == w.H)
      split.push_back({0, w.L});
    else
      split = {{0, 1}, {1, w.L - 1}};
    for (auto [first, layers] : split) {
      int in = first == 0 ? w.E : w.H;
      memory::desc src_layer({T, B, in}, data, tag::tnc), dst_layer({T, B, H}, data, tag::tnc);
      memory::desc iter = with_state ? memory::desc({layers, 1, B, H}, data, tag::ldnc) : memory::desc();
      memory::desc iter_c = with_state ? memory::desc({layers, 1, B, H}, cdt, tag::ldnc) : memory::desc();
      const dt wdt = weights_type(data);
      const int G = w.gru ? 3 : 4;  // gates of the weights; the LBR GRU has 4 biases
      memory::desc wl_any({layers, 1, in, G, H}, wdt, tag::any), wi_any({layers, 1, H, G, H}, wdt, tag::any),
          b_md({layers, 1, 4, H}, dt::f32, tag::ldgo);
      primitive_attr attr;  // int8: the quantization of the data and weights (the weight reorders use it too)
      if (data == dt::u8) {
        attr.set_rnn_data_qparams(kDataScale, kDataShift);
        attr.set_rnn_weights_qparams(0, {kWeightScale});
      }
      std::vector<float> wl, wi, bb;  // the group's layers, contiguous (ldigo / ldgo)
      for (int l = first; l < first + layers; ++l) {
        wl.insert(wl.end(), w.w_layer[l].begin(), w.w_layer[l].begin() + ptrdiff_t(in) * G * H);
        wi.insert(wi.end(), w.w_iter[l].begin(), w.w_iter[l].begin() + ptrdiff_t(H) * G * H);
        bb.insert(bb.end(), w.bias[l].begin(), w.bias[l].end());
      }
      const auto dir = rnn_direction::unidirectional_left2right;
      auto finish = [&](primitive prim, const auto& pd) {
        Group g{first, layers, in, std::move(prim), {}, {}, {}, pd.impl_info_str()};
        g.w_layer =
            reordered(eng, s, pd.weights_layer_desc(), {layers, 1, in, G, H}, tag::ldigo, wl.data(), attr);
        g.w_iter =
            reordered(eng, s, pd.weights_iter_desc(), {layers, 1, H, G, H}, tag::ldigo, wi.data(), attr);
        g.bias = reordered(eng, s, pd.bias_desc(), {layers, 1, 4, H}, tag::ldgo, bb.data());
        groups.push_back(std::move(g));
      };
      if (w.gru) {
        lbr_gru_forward::desc d(prop_kind::forward_inference, dir, src_layer, iter, wl_any, wi_any, b_md,
                                dst_layer, iter);
        lbr_gru_forward::primitive_desc pd(d, attr, eng);
        finish(lbr_gru_forward(pd), pd);
      } else {
        lstm_forward::desc d(prop_kind::forward_inference, dir, src_layer, iter, iter_c, wl_any, wi_any, b_md,
                             dst_layer, iter, iter_c);
        lstm_forward::primitive_desc pd(d, attr, eng);
        finish(lstm_forward(pd), pd);
      }
    }
  }

  std::string impl() const {
    std::string r;
    for (auto& g : groups) r += (r.empty() ? "" : ", ") + g.impl;
    return r;
  }

  // Argument maps of one call: src [T,B,in] -> dst [T,B,H]; states (if any) [L,1,B,H] from src_h/src_c
  // (nullptr: zeros, only without state) to dst_h/dst_c. Elements of type data (h) and cdt (c).
  std::vector<std::unordered_map<int, memory>> args(const engine& eng, void* src, void* dst, void* src_h,
                                                    void* src_c, void* dst_h, void* dst_c) {
    std::vector<std::unordered_map<int, memory>> out;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      auto& g = groups[gi];
      void* in = gi == 0 ? src : mid.data();
      void* o = gi + 1 == groups.size() ? dst : mid.data();
      std::unordered_map<int, memory> a{{DNNL_ARG_SRC_LAYER, memory({{T, B, g.in}, data, tag::tnc}, eng, in)},
                                        {DNNL_ARG_DST_LAYER, memory({{T, B, H}, data, tag::tnc}, eng, o)},
                                        {DNNL_ARG_WEIGHTS_LAYER, g.w_layer},
                                        {DNNL_ARG_WEIGHTS_ITER, g.w_iter},
                                        {DNNL_ARG_BIAS, g.bias}};
      if (with_state) {
        memory::desc md({g.layers, 1, B, H}, data, tag::ldnc), md_c({g.layers, 1, B, H}, cdt, tag::ldnc);
        size_t off = size_t(g.first) * B * H, off_h = off * bytes_of(data), off_c = off * bytes_of(cdt);
        a[DNNL_ARG_SRC_ITER] = memory(md, eng, static_cast<char*>(src_h) + off_h);
        if (!gru) a[DNNL_ARG_SRC_ITER_C] = memory(md_c, eng, static_cast<char*>(src_c) + off_c);
        a[DNNL_ARG_DST_ITER] = memory(md, eng, static_cast<char*>(dst_h) + off_h);
        if (!gru) a[DNNL_ARG_DST_ITER_C] = memory(md_c, eng, static_cast<char*>(dst_c) + off_c);
      }
      out.push_back(std::move(a));
    }
    return out;
  }

  void run(stream& s, std::vector<std::unordered_map<int, memory>>& a) {
    for (size_t gi = 0; gi < groups.size(); ++gi) groups[gi].prim.execute(s, a[gi]);
  }
};

// [M, H] x [H, V] + bias -> [M, V], then log-softmax or softmax over V (in place).
struct Projection {
  matmul mm;
  memory w, b;
  primitive norm;
  std::string impl, norm_impl;
  int M, H, V;
  dt data;  // src (weights: weights_type(data)); bias and dst are f32

  Projection(const engine& eng, stream& s, const Weights& wt, int M_, bool log, dt data_)
      : M(M_), H(wt.H), V(wt.V), data(data_) {
    memory::desc src({M, H}, data, tag::ab), w_any({H, V}, weights_type(data), tag::any),
        bias({1, V}, dt::f32, tag::ab), dst({M, V}, dt::f32, tag::ab);
    primitive_attr attr, w_attr;  // int8: u8 src with its zero point, s8 weights, f32 dst rescaled
    if (data == dt::u8) {
      attr.set_output_scales(0, {1.f / (kDataScale * kWeightScale)});
      attr.set_zero_points(DNNL_ARG_SRC, 0, {static_cast<int32_t>(kDataShift)});
      w_attr.set_output_scales(0, {kWeightScale});
    }
    matmul::primitive_desc pd(matmul::desc(src, w_any, bias, dst), attr, eng);
    mm = matmul(pd);
    impl = pd.impl_info_str();
    w = reordered(eng, s, pd.weights_desc(), {H, V}, tag::ab, wt.w_out.data(), w_attr);
    b = memory(bias, eng);
    std::memcpy(b.get_data_handle(), wt.b_out.data(), sizeof(float) * V);
    if (data == dt::u8)  // oneDNN 2.x adds an int8 matmul's bias before the output scale: in the s32 domain
      for (int i = 0; i < V; ++i) static_cast<float*>(b.get_data_handle())[i] *= kDataScale * kWeightScale;
    if (log) {
      logsoftmax_forward::primitive_desc npd({prop_kind::forward_inference, dst, 1}, eng);
      norm = logsoftmax_forward(npd);
      norm_impl = npd.impl_info_str();
    } else {
      softmax_forward::primitive_desc npd({prop_kind::forward_inference, dst, 1}, eng);
      norm = softmax_forward(npd);
      norm_impl = npd.impl_info_str();
    }
  }

  struct Args {
    std::unordered_map<int, memory> mm, norm;
  };
  Args args(const engine& eng, void* src, float* dst) {
    memory s({{M, H}, data, tag::ab}, eng, src), d({{M, V}, dt::f32, tag::ab}, eng, dst);
    return {{{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, d}},
            {{DNNL_ARG_SRC, d}, {DNNL_ARG_DST, d}}};
  }
  void run(stream& s, Args& a) {
    mm.execute(s, a.mm);
    norm.execute(s, a.norm);
  }
};

void gather(const Weights& w, const int* tokens, size_t n, float* out, dt data) {
  const size_t row = bytes_of(data) * w.E;
  const char* table = data == dt::bf16 ? reinterpret_cast<const char*>(w.embedding_bf16.data())
                      : data == dt::u8 ? reinterpret_cast<const char*>(w.embedding_u8.data())
                                       : reinterpret_cast<const char*>(w.embedding.data());
  char* o = reinterpret_cast<char*>(out);
  for (size_t i = 0; i < n; ++i) std::memcpy(o + i * row, table + size_t(tokens[i]) * row, row);
}

struct Cell {
  std::string workload;
  int B, T, threads;
  std::string precision;  // fp32, bf16 or int8
};

double flops_per_call(const Weights& w, const std::string& workload, int B, int T) {
  double lstm = 0;
  for (int k = 0; k < w.L; ++k) lstm += 2.0 * (w.gru ? 3 : 4) * w.H * ((k == 0 ? w.E : w.H) + w.H);
  double proj = 2.0 * w.H * w.V;
  if (workload == "predict") return double(B) * T * lstm + B * proj;
  return double(B) * T * (lstm + proj);
}

const char* isa_name(cpu_isa isa) {
  switch (isa) {
    case cpu_isa::sse41:
      return "sse41";
    case cpu_isa::avx:
      return "avx";
    case cpu_isa::avx2:
      return "avx2";
    case cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case cpu_isa::avx512_core:
      return "avx512_core";
    case cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

void run_cell(const Weights& w, const Cell& c, int reps, int warmup, double min_time, uint64_t seed) {
  omp_set_num_threads(c.threads);
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const int B = c.B, T = c.T, V = w.V, E = w.E, H = w.H, L = w.L;
  Rng rng{seed * 1000003 + 7};
  std::vector<int> x(size_t(T) * B), y(size_t(T) * B);  // [T, B]: time-major, as src_layer
  for (auto& v : x) v = int(rng.next() % uint64_t(V));
  for (auto& v : y) v = int(rng.next() % uint64_t(V));
  std::function<void()> call;
  std::string impl;
  double sink = 0;
  const dt data = c.precision == "bf16" ? dt::bf16 : c.precision == "int8" ? dt::u8 : dt::f32;
  const size_t es = bytes_of(data);

  // Everything the call touches lives here, created before timing.
  std::vector<float> emb, hid, logits, h0, c0, h1, c1, h2, c2;
  std::vector<int> tok(B);
  Rng draw{seed};
  std::unique_ptr<Lstm> lstm;
  std::unique_ptr<Projection> proj;
  std::vector<std::vector<std::unordered_map<int, memory>>> lstm_args;
  std::vector<Projection::Args> proj_args;

  if (c.workload == "score" || c.workload == "predict") {
    bool score = c.workload == "score";
    emb.resize(size_t(T) * B * E);
    hid.resize(size_t(T) * B * H);
    int M = score ? T * B : B;
    logits.resize(size_t(M) * V);
    lstm = std::make_unique<Lstm>(eng, s, w, T, B, false, data);
    proj = std::make_unique<Projection>(eng, s, w, M, true, data);
    lstm_args.push_back(lstm->args(eng, emb.data(), hid.data(), nullptr, nullptr, nullptr, nullptr));
    char* last = reinterpret_cast<char*>(hid.data()) + (score ? 0 : size_t(T - 1) * B * H * es);
    proj_args.push_back(proj->args(eng, last, logits.data()));
    call = [&, score] {
      gather(w, x.data(), x.size(), emb.data(), data);
      lstm->run(s, lstm_args[0]);
      proj->run(s, proj_args[0]);
      s.wait();
      if (score) {
        double sum = 0;
        for (size_t i = 0; i < y.size(); ++i) sum += logits[i * V + size_t(y[i])];
        sink += sum;
      } else {
        sink += logits[0];
      }
    };
  } else if (c.workload == "generate") {
    emb.resize(size_t(B) * E);
    hid.resize(size_t(B) * H);
    logits.resize(size_t(B) * V);
    size_t st = size_t(L) * B * H;
    h0.assign(st, 0.f), c0.assign(st, 0.f), h1.assign(st, 0.f), c1.assign(st, 0.f), h2.assign(st, 0.f),
        c2.assign(st, 0.f);
    lstm = std::make_unique<Lstm>(eng, s, w, 1, B, true, data);
    proj = std::make_unique<Projection>(eng, s, w, B, false, data);
    // step 0: zeros (h0, c0) -> (h1, c1); odd steps (h1, c1) -> (h2, c2); even steps back.
    lstm_args.push_back(lstm->args(eng, emb.data(), hid.data(), h0.data(), c0.data(), h1.data(), c1.data()));
    lstm_args.push_back(lstm->args(eng, emb.data(), hid.data(), h1.data(), c1.data(), h2.data(), c2.data()));
    lstm_args.push_back(lstm->args(eng, emb.data(), hid.data(), h2.data(), c2.data(), h1.data(), c1.data()));
    proj_args.push_back(proj->args(eng, hid.data(), logits.data()));
    call = [&] {
      for (int b = 0; b < B; ++b) tok[b] = x[b];
      for (int t = 0; t < T; ++t) {
        gather(w, tok.data(), size_t(B), emb.data(), data);
        lstm->run(s, lstm_args[t == 0 ? 0 : (t % 2 == 1 ? 1 : 2)]);
        proj->run(s, proj_args[0]);
        s.wait();
        for (int b = 0; b < B; ++b) {
          const float* p = logits.data() + size_t(b) * V;
          double u = draw.uniform(), acc = 0;
          int k = 0;
          for (; k < V - 1; ++k) {
            acc += p[k];
            if (acc > u) break;
          }
          tok[b] = k;
        }
      }
      sink += tok[0];
    };
  } else {
    std::fprintf(stderr, "onednn_bench: unknown workload %s\n", c.workload.c_str());
    std::exit(2);
  }
  impl = std::string(w.gru ? "gru " : "lstm ") + lstm->impl() + "; matmul " + proj->impl + "; " +
         (c.workload == "generate" ? "softmax " : "logsoftmax ") + proj->norm_impl;
  std::string detail =
      data == dt::bf16
          ? std::string("bf16 embedding, LSTM src/dst, weights and h state; c state ") +
                (lstm->cdt == dt::bf16 ? "bf16" : "f32") + "; bf16 matmul with f32 bias and dst; f32 " +
                (c.workload == "generate" ? "softmax" : "log-softmax")
      : data == dt::u8 ? std::string(
                             "int8 static quantization (fixed scales, not calibrated): u8 embedding, LSTM "
                             "src/dst and h state, s8 weights, f32 bias and c state; u8 x s8 matmul "
                             "with a src zero point, f32 bias and dst; f32 ") +
                             (c.workload == "generate" ? "softmax" : "log-softmax")
                       : std::string("fp32");

  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> lat, rep_tps;
  using clk = std::chrono::steady_clock;
  for (int r = 0; r < reps; ++r) {
    long n = 0;
    double spent = 0;
    while (spent < min_time || n == 0) {
      auto t0 = clk::now();
      call();
      double dt = std::chrono::duration<double>(clk::now() - t0).count();
      lat.push_back(dt);
      spent += dt;
      ++n;
    }
    rep_tps.push_back(double(n) * B * T / spent);
  }
  double mean = std::accumulate(rep_tps.begin(), rep_tps.end(), 0.0) / rep_tps.size(), sd = 0;
  for (double v : rep_tps) sd += (v - mean) * (v - mean);
  sd = rep_tps.size() > 1 ? std::sqrt(sd / (rep_tps.size() - 1)) : 0.0;
  double mean_call = std::accumulate(lat.begin(), lat.end(), 0.0) / lat.size();
  auto v = version();
  std::printf(
      "{\"model\": \"onednn\", \"peer\": \"onednn\", \"shape\": \"V=%d E=%d H=%dx%d%s\", \"workload\": "
      "\"%s\", "
      "\"batch\": %d, \"length\": %d, \"threads\": %d, \"threads_effective\": %d, \"repetitions\": %d, "
      "\"calls\": %zu, \"tokens_per_call\": %d, \"tokens_per_s\": %.3f, \"tokens_per_s_sd\": %.3f, "
      "\"tokens_per_s_median\": %.3f, \"tokens_per_s_min\": %.3f, \"tokens_per_s_max\": %.3f, "
      "\"calls_per_s\": %.3f, \"latency_p50_us\": %.4f, \"latency_p99_us\": %.4f, \"gflops\": %.4f, "
      "\"isa\": \"%s\", \"build\": \"oneDNN %d.%d.%d %s\", \"impl\": \"%s\", \"note\": \"%s\", "
      "\"precision\": "
      "\"%s\", \"precision_detail\": \"%s\", \"checksum\": %.6g}\n",
      V, E, H, L, w.gru ? " gru" : "", c.workload.c_str(), B, T, c.threads, omp_get_max_threads(), reps,
      lat.size(), B * T, mean, sd, percentile(rep_tps, 50), *std::min_element(rep_tps.begin(), rep_tps.end()),
      *std::max_element(rep_tps.begin(), rep_tps.end()), mean / (B * T), percentile(lat, 50) * 1e6,
      percentile(lat, 99) * 1e6, flops_per_call(w, c.workload, B, T) / mean_call * 1e-9,
      isa_name(get_effective_cpu_isa()), v->major, v->minor, v->patch,
      v->cpu_runtime == DNNL_RUNTIME_OMP   ? "omp"
      : v->cpu_runtime == DNNL_RUNTIME_TBB ? "tbb"
                                           : "seq",
      impl.c_str(),
      c.workload == "generate" ? "softmax primitive + cumulative-sum draw" : "logsoftmax primitive",
      c.precision.c_str(), detail.c_str(), sink);
  std::fflush(stdout);
  std::fprintf(stderr, "onednn %s %s b=%d s=%d t=%d: %.0f tok/s (%s)\n", c.precision.c_str(),
               c.workload.c_str(), B, T, c.threads, percentile(rep_tps, 50), impl.c_str());
}

[[noreturn]] void usage() {
  std::fprintf(
      stderr,
      "usage: onednn_bench --shape V,E,H,L [-w score,predict,generate] [-b 1,...] [-s T,...] [-t 1,...]\n"
      "                    [-r reps] [--warmup n] [--min-time seconds] [--seed n] [--precision fp32|bf16]\n"
      "                    [--cell lstm|gru]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> shape, batches{1}, lengths{32}, threads{1};
  std::vector<std::string> workloads{"score", "predict", "generate"};
  int reps = 5, warmup = 2;
  double min_time = 0.1;
  uint64_t seed = 1;
  std::string precision = "fp32", cell = "lstm";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage();
    std::string v = argv[++i];
    if (a == "--shape")
      shape = ints(v);
    else if (a == "-w" || a == "--workload")
      workloads = words(v);
    else if (a == "-b" || a == "--batch")
      batches = ints(v);
    else if (a == "-s" || a == "--length")
      lengths = ints(v);
    else if (a == "-t" || a == "--threads")
      threads = ints(v);
    else if (a == "-r" || a == "--repetitions")
      reps = std::atoi(v.c_str());
    else if (a == "--warmup")
      warmup = std::atoi(v.c_str());
    else if (a == "--min-time")
      min_time = std::atof(v.c_str());
    else if (a == "--seed")
      seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--precision")
      precision = v;
    else if (a == "--cell")
      cell = v;
    else
      usage();
  }
  if (shape.size() != 4 || reps < 1) usage();
  if (precision != "fp32" && precision != "bf16" && precision != "int8") {
    std::fprintf(stderr, "onednn_bench: unknown --precision %s (fp32, bf16 or int8)\n", precision.c_str());
    return 2;
  }
  if (cell != "lstm" && (cell != "gru" || precision != "fp32")) {
    std::fprintf(stderr, "onednn_bench: --cell %s: lstm at every precision, gru at fp32\n", cell.c_str());
    return 2;
  }
  Weights w(shape[0], shape[1], shape[2], shape[3], seed);
  w.gru = cell == "gru";
  for (auto& wl : workloads)
    for (int t : threads)
      for (int b : batches)
        for (int s : lengths) {
          try {
            run_cell(w, {wl, b, s, t, precision}, reps, warmup, min_time, seed);
          } catch (const dnnl::error& e) {  // e.g. bf16 on a CPU or oneDNN without it
            std::fprintf(stderr, "onednn_bench: %s %s b=%d s=%d t=%d: %s (status %d)\n", precision.c_str(),
                         wl.c_str(), b, s, t, e.what(), int(e.status));
            return 1;
          }
        }
  return 0;
}
