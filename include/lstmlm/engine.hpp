// Batched forward over variable-length sequences. The Model is shared and immutable; the caller owns
// the State of every sequence. An Engine owns scratch buffers and a thread pool: one Engine per
// calling thread (it is not itself thread-safe), any number of Engines per Model.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/model.hpp"
#include "lstmlm/precision.hpp"

namespace lstmlm {

// Recurrent state of one sequence: per layer, h (output width) and c (hidden width).
struct State {
  std::vector<std::vector<float>> h, c;
  // A model on the double-precision path (ModelConfig::exact_path): each layer's h and c in double (h and c
  // hold them rounded to float; a state without them starts from h and c), and the last inputs fed, newest
  // first, that its direct connections hash (a reset state: the id 0, as rnnlm's; the zero input is -1).
  // Empty otherwise.
  std::vector<std::vector<double>> h64, c64;
  std::vector<int32_t> history;
  static State zeros(const Model& model);
  bool operator==(const State&) const = default;
};

// Per-row token sequences of a batch; rows may have different lengths (0 allowed: state unchanged).
using Sequences = std::vector<std::vector<int32_t>>;

// Threads an Engine accepts; more is refused (UsageError) rather than exhausting the process table.
inline constexpr int kMaxThreads = 256;

// Bytes of the kernel-ready copy of the model's weights for `precision` (packed once per model and
// precision, shared by its Engines).
size_t packed_bytes(const Model& model, Precision precision = Precision::Fp32,
                    EmbeddingFold fold = EmbeddingFold::Auto);

// Packs `model` for `precision`, as an Engine of it would, and frees the float layer weights it was packed
// from (Model::release_layer_weights): a process that runs one precision then holds its weights once. A
// loaded model holds no float matrices anyway (packed from its file a block of rows at a time), and packs
// another precision from the file on first use; for a model built in memory an Engine of another precision
// then throws UsageError, and so does packed_bytes() of another precision. Call it before the model is
// shared between threads. summarize() (summary.hpp) keeps the counts it made before.
void keep_only_packed(const std::shared_ptr<const Model>& model, Precision precision,
                      EmbeddingFold fold = EmbeddingFold::Auto);

// The kernels an Engine of this precision would run on this CPU, "<precision>/<isa>" (e.g. "int8/amx"):
// fp32 on the ISA the build is compiled for, bf16 and int8 on the best level the CPU has, at most
// LSTMLM_ISA (docs/precision.md); "bf16/refused" where an Engine of bf16 would be refused (AVX2, where fp32
// is faster). Throws UsageError for an LSTMLM_ISA value that names no level.
std::string kernels_for(Precision precision);

// Measures of each step's predictive distribution that Engine::score can add beside the scores, from the
// same logits and log-sum-exp (the scores stay bit-identical); a null pointer is not computed. Sized like
// the scores: [rows][steps].
struct StepMeasures {
  // Entropy in nats, -sum_j p_j ln p_j over the whole vocabulary, accumulated in double.
  std::vector<std::vector<float>>* entropy = nullptr;
  // 1 + the number of vocabulary entries whose logit is strictly greater than the target's (ties share
  // the best rank; 1 = the most probable token).
  std::vector<std::vector<int32_t>>* rank = nullptr;
  // The top recurrent layer's output after each step's input (what the decoder reads; the hidden states a
  // cache pointer attends over): [rows][steps x the layer's output width].
  std::vector<std::vector<float>>* top = nullptr;
  // The scores in double: the double-precision path's own (ModelConfig::exact_path), else the float scores
  // widened. A target V (an out-of-vocabulary word fed as the zero input, tokenizer.oov_input) gets NaN.
  std::vector<std::vector<double>>* logprob64 = nullptr;
  // The scores are the targets' logits, bias + W[target] . h, no normaliser (a self-normalised model's
  // score, `--softmax skip`): only each target's row of the output layer is read, unless `rank` needs the
  // others. Not with entropy, not on the double-precision path (UsageError).
  bool logits = false;
};

// EngineOptions::column_split_bytes and row_split_bytes by default.
inline constexpr size_t kDefaultColumnSplitBytes = size_t{1} << 20;
inline constexpr size_t kDefaultRowSplitBytes = size_t{32} << 20;

struct EngineOptions {
  int threads = 0;  // <= 0: one per core; at most kMaxThreads
  // The kernels' precision; Fp32 is the default and the numerics contract.
  Precision precision = Precision::Fp32;
  // When a batch has fewer than 8 rows per thread (64 on AMX), the threads share each operation's columns
  // (gates of a step, input terms, logits) whose weights are at least this many bytes: there a step is
  // bound by streaming the weights, which each core can do for its share. Smaller operations stay on one
  // thread, where a per-step barrier would cost more than it saves. The results are bit-identical either
  // way; 0 splits everything (the tests do). The default keeps a SEED-sized model (largest operation 221 KB)
  // on one thread: split, its predict call took 5x longer on a loaded 2-core AMD Zen 3 (AVX2); MEDIUM (W_hh
  // 6.8 MB, decoder 26 MB) splits, and its predict at batch 1 ran 2.0x faster on 2 threads than on 1 there
  // (docs/performance.md).
  size_t column_split_bytes = kDefaultColumnSplitBytes;
  // Otherwise (more rows, or smaller operations), a batch's rows are dealt to the threads only if the call
  // streams at least this many bytes of weights (its tokens x the weights a token reads, counted in fp32's
  // 4 bytes a weight at every precision: a small call's time shrinks less than its bytes at bf16 and int8);
  // a smaller call runs on one thread. A call's hand-off to the pool costs tens of microseconds on a VM:
  // split, SEED score at batch 8 (about 12 MB, 37 us on one thread) and generate at batch 64 (24 MB) ran
  // slower on 2 threads than on 1 on an AMD EPYC Zen 5, and score at batch 64 (97 MB) 1.46x faster (int8
  // 1.47x on a Zen 4). Bit-identical either way; 0 splits every batch (the tests do).
  size_t row_split_bytes = kDefaultRowSplitBytes;
  // Layer 0's input term: a folded table, or the embedding through W_ih at every step (EmbeddingFold).
  EmbeddingFold fold = EmbeddingFold::Auto;
};

class Engine {
 public:
  explicit Engine(std::shared_ptr<const Model> model, const EngineOptions& options);
  // threads <= 0: one per core; more than kMaxThreads is refused. A thread that cannot be started is a
  // UsageError naming the count, never a hang.
  explicit Engine(std::shared_ptr<const Model> model, int threads = 0);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Model& model() const { return *model_; }
  int threads() const;
  // The kernels that run: "<precision>/<isa>", e.g. "fp32/avx2".
  std::string_view kernels() const;

  // Input ids are in [0, V); a one-hot model (embedding_dim 0) also takes V, the zero input vector (a Keras
  // pad of a one-hot array, tasks::window_pad_id). Targets are always in [0, V).
  // Scoring: for each row r and step t, out[r][t] = ln p(targets[r][t] | inputs[r][0..t], states[r]).
  // targets[r].size() must equal inputs[r].size(). states are advanced past inputs.
  void score(const Sequences& inputs, const Sequences& targets, std::vector<State>& states,
             std::vector<std::vector<float>>& out);
  // The same, with the measures of every scored step's distribution (StepMeasures).
  void score(const Sequences& inputs, const Sequences& targets, std::vector<State>& states,
             std::vector<std::vector<float>>& out, const StepMeasures& measures);

  // Next-token log-probabilities after the last input of each row: out is [rows, V].
  // A row with no input gives the distribution from its state's h.
  void predict(const Sequences& inputs, std::vector<State>& states, MatrixRM& out);
  // The same rows as logits (bias + W h, before any normaliser), for a ranking that needs none: the
  // log-sum-exp and the log-softmax are not computed. Not on the double-precision path (UsageError).
  void predict_logits(const Sequences& inputs, std::vector<State>& states, MatrixRM& out);

  // Full log-probabilities at every step: out[r] is [len_r, V].
  void logprobs(const Sequences& inputs, std::vector<State>& states, std::vector<MatrixRM>& out);

  // Advances the states over inputs without computing any output distribution.
  void advance(const Sequences& inputs, std::vector<State>& states);

  // KenLM-style single step: out = state after `token` from `in`; returns ln p(next | ...) over V.
  void step(const State& in, int32_t token, State& out, std::vector<float>& logprobs);

 private:
  struct Impl;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lstmlm
