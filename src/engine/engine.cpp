// Engine: batched forward over variable-length rows. Rows are dealt to the pool's threads; each thread
// runs its rows through every layer and step on its own scratch buffers (forward.cpp), so the only shared
// data is the immutable Model and its packed weights. A row's numbers never depend on which thread or
// tile computed it (kernels/backend.hpp). A batch with fewer rows than threads runs on thread 0 instead,
// the columns of each large operation split across all the threads (engine/team.hpp): the same bits.
#include "lstmlm/engine.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <thread>

#include "engine/exact.hpp"
#include "engine/forward.hpp"
#include "engine/packed_model.hpp"
#include "engine/team.hpp"
#include "engine/thread_pool.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/summary.hpp"

namespace lstmlm {

using engine::Job;
using engine::Mode;
using engine::Work;

struct Engine::Impl {
  std::shared_ptr<const engine::PackedModel> packed;
  engine::ThreadPool pool;
  engine::Team team;
  size_t split_bytes;
  size_t row_split_bytes;
  size_t largest_op = 0;    // bytes of the weights the largest operation streams
  size_t token_bytes = 0;   // fp32 bytes of the weights one token of one row streams through the layers
  size_t decode_bytes = 0;  // and of the decoder's, for each token decoded
  std::vector<Work> work;
  std::vector<int> order;
  Sequences one_input;
  std::vector<State> one_state;
  MatrixRM one_out;

  const Model* exact = nullptr;  // a model on the double-precision path (engine/exact.hpp): nothing packed

  Impl(const Model& m, int threads, const EngineOptions& options)
      : packed(m.config().exact_path() ? nullptr
                                       : engine::packed_model(m, options.precision, nullptr, options.fold)),
        pool(threads),
        team(threads),
        split_bytes(options.column_split_bytes),
        row_split_bytes(options.row_split_bytes),
        work(static_cast<size_t>(threads)) {
    if (!packed) {
      // The double-precision path has no kernels of another precision: asking for one is refused, not
      // ignored.
      if (options.precision != Precision::Fp32)
        throw UsageError::option("precision",
                                 " " + std::string(precision_name(options.precision)) +
                                     ": this model runs on the double-precision path (rnnlm's class "
                                     "output or direct connections, docs/model-format.md): fp32 only");
      exact = &m;
      return;
    }
    for (const auto& l : packed->layers) {
      largest_op = std::max({largest_op, l->step_bytes(), l->term_bytes()});
      token_bytes += l->step_bytes() + l->term_bytes();
    }
    largest_op = std::max(largest_op, packed->decoder->bytes());
    decode_bytes = packed->decoder->bytes();
    // The row split weighs a call in fp32's bytes at every precision: a call of small operations gains
    // less than its bytes shrink (SEED score int8 1.8x fp32's tokens/s on a quarter of the bytes), so
    // the precision's own bytes kept int8 and bf16 calls on one thread that fp32 deals to both.
    const size_t widen = options.precision == Precision::Int8   ? 4
                         : options.precision == Precision::Bf16 ? 2
                                                                : 1;
    token_bytes *= widen;
    decode_bytes *= widen;
  }

  void run(const Job& job);
};

namespace {

// `inputs` false: the ids are score's targets, which are always vocabulary entries.
void check_states(const Model& model, const Sequences& inputs, const std::vector<State>& states,
                  bool are_inputs = true) {
  if (states.size() != inputs.size())
    throw UsageError("engine: " + std::to_string(inputs.size()) + " input rows but " +
                     std::to_string(states.size()) + " states");
  const auto& layers = model.config().layers;
  for (size_t r = 0; r < states.size(); ++r) {
    const State& s = states[r];
    bool ok = s.h.size() == layers.size() && s.c.size() == layers.size();
    for (size_t k = 0; ok && k < layers.size(); ++k)
      ok = s.h[k].size() == size_t(layers[k].output_size()) &&
           s.c[k].size() == size_t(layers[k].memory_size());
    if (!ok)
      throw UsageError("engine: state of row " + std::to_string(r) +
                       " does not match the model's layer sizes");
  }
  // A one-hot model (embedding_dim 0) also takes the id V: the zero input vector (tasks::window_pad_id).
  const int32_t V = model.vocab_size();
  // A target V: an out-of-vocabulary word fed as the zero input (tokenizer.oov_input "zero"), not scored.
  const bool zero_oov = model.config().tokenizer.oov_input == OovInput::Zero;
  const int32_t limit =
      V + ((are_inputs && model.config().embedding_dim == 0) || (!are_inputs && zero_oov) ? 1 : 0);
  for (size_t r = 0; r < inputs.size(); ++r)
    for (size_t t = 0; t < inputs[r].size(); ++t)
      if (inputs[r][t] < 0 || inputs[r][t] >= limit)
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
  if (exact) {
    engine::exact_forward(*exact, job);
    return;
  }
  const Sequences& in = *job.inputs;
  const size_t B = in.size();
  // Longest rows first: at step t the rows still running are a prefix of each thread's list.
  order.resize(B);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return in[size_t(a)].size() > in[size_t(b)].size(); });
  const int T = pool.size();
  for (auto& w : work) w.rows.clear();
  if (B >= 1 && B < size_t(T) * size_t(packed->backend->column_split_rows()) && largest_op >= split_bytes) {
    // Fewer rows than threads (or than the backend's column_split_rows per thread): one forward pass of
    // all rows on thread 0, each large operation's columns split across every thread.
    work[0].rows.assign(order.begin(), order.end());
    engine::run_session(pool, team, [&] {
      engine::forward(*packed, work[0], job, engine::Split{&team, split_bytes});
    });
    return;
  }
  size_t tokens = 0;
  for (const auto& row : in) tokens += row.size();
  // What the call streams: every token through the layers, and the decoder once per token decoded (every
  // token when scoring, a row's last when predicting, none when advancing).
  const size_t decoded = job.mode == engine::Mode::Predict   ? B
                         : job.mode == engine::Mode::Advance ? 0
                                                             : tokens;
  if (B < 2 || T == 1 || tokens * token_bytes + decoded * decode_bytes < row_split_bytes) {
    work[0].rows.assign(order.begin(), order.end());
    engine::forward(*packed, work[0], job);
    return;
  }
  // Dealt round-robin: every thread gets a similar mix of lengths, still sorted longest first.
  for (size_t i = 0; i < B; ++i) work[i % size_t(T)].rows.push_back(order[i]);
  pool.run([&](int t) { engine::forward(*packed, work[size_t(t)], job); });
}

Engine::Engine(std::shared_ptr<const Model> model, int threads)
    : Engine(std::move(model),
             EngineOptions{threads, Precision::Fp32, kDefaultColumnSplitBytes, kDefaultRowSplitBytes}) {}

Engine::Engine(std::shared_ptr<const Model> model, const EngineOptions& options) : model_(std::move(model)) {
  if (!model_) throw UsageError("engine: no model");
  int threads = options.threads;
  if (threads > kMaxThreads)
    throw UsageError("engine: " + std::to_string(threads) + " threads requested, at most " +
                     std::to_string(kMaxThreads) + " are supported");
  if (threads <= 0)
    threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxThreads);
  impl_ = std::make_unique<Impl>(*model_, threads, options);
}

Engine::~Engine() = default;

int Engine::threads() const { return impl_->pool.size(); }

std::string_view Engine::kernels() const {
  return impl_->packed ? impl_->packed->backend->name() : std::string_view("fp64/exact");
}

size_t packed_bytes(const Model& model, Precision precision, EmbeddingFold fold) {
  if (model.config().exact_path()) return 0;  // the double-precision path packs nothing
  return engine::packed_model(model, precision, nullptr, fold)->bytes();
}

void keep_only_packed(const std::shared_ptr<const Model>& model, Precision precision, EmbeddingFold fold) {
  // Model::load and Model::create make a non-const Model and hand it out as const: the cast is defined,
  // and the caller has not shared the model yet. The summary counts the float weights: made while they exist.
  summarize(*model);
  if (model->config().exact_path()) return;  // the double-precision path reads the float weights
  engine::packed_model(*model, precision, std::const_pointer_cast<Model>(model).get(), fold);
}

std::string kernels_for(Precision precision) {
  if (!kernels::refusal(precision).empty()) return std::string(precision_name(precision)) + "/refused";
  return std::string(kernels::backend(precision).name());
}

void Engine::score(const Sequences& inputs, const Sequences& targets, std::vector<State>& states,
                   std::vector<std::vector<float>>& out) {
  score(inputs, targets, states, out, StepMeasures{});
}

void Engine::score(const Sequences& inputs, const Sequences& targets, std::vector<State>& states,
                   std::vector<std::vector<float>>& out, const StepMeasures& measures) {
  Job job = checked_job(*model_, Mode::Score, inputs, states);
  check_states(*model_, targets, states, false);
  if (measures.logits && impl_->exact)
    throw UsageError::option("softmax",
                             " skip: this model runs on the double-precision path, whose "
                             "probabilities are exact; it has no unnormalised score");
  if (measures.logits && measures.entropy)
    throw UsageError::option("softmax", " skip: not with entropy, which needs the normaliser");
  for (size_t r = 0; r < inputs.size(); ++r)
    if (targets[r].size() != inputs[r].size())
      throw UsageError("engine: row " + std::to_string(r) + " has " + std::to_string(inputs[r].size()) +
                       " inputs but " + std::to_string(targets[r].size()) + " targets");
  out.resize(inputs.size());
  for (size_t r = 0; r < inputs.size(); ++r) out[r].assign(inputs[r].size(), 0.0f);
  job.targets = &targets;
  job.scores = &out;
  // Sized before the threads start: each thread writes only its own rows.
  if (measures.entropy) {
    measures.entropy->resize(inputs.size());
    for (size_t r = 0; r < inputs.size(); ++r) (*measures.entropy)[r].assign(inputs[r].size(), 0.0f);
  }
  if (measures.rank) {
    measures.rank->resize(inputs.size());
    for (size_t r = 0; r < inputs.size(); ++r) (*measures.rank)[r].assign(inputs[r].size(), 0);
  }
  if (measures.logprob64) {
    measures.logprob64->resize(inputs.size());
    for (size_t r = 0; r < inputs.size(); ++r) (*measures.logprob64)[r].assign(inputs[r].size(), 0.0);
  }
  if (measures.top) {
    const size_t width = size_t(model_->config().layers.back().output_size());
    measures.top->resize(inputs.size());
    for (size_t r = 0; r < inputs.size(); ++r) (*measures.top)[r].assign(inputs[r].size() * width, 0.0f);
  }
  job.measures = measures;
  impl_->run(job);
  if (measures.logprob64 && !impl_->exact)
    for (size_t r = 0; r < inputs.size(); ++r)
      std::copy(out[r].begin(), out[r].end(), (*measures.logprob64)[r].begin());
}

void Engine::predict(const Sequences& inputs, std::vector<State>& states, MatrixRM& out) {
  Job job = checked_job(*model_, Mode::Predict, inputs, states);
  out.resize(Eigen::Index(inputs.size()), model_->vocab_size());
  job.predict = &out;
  impl_->run(job);
}

void Engine::predict_logits(const Sequences& inputs, std::vector<State>& states, MatrixRM& out) {
  if (impl_->exact)
    throw UsageError::option("softmax",
                             " skip: this model runs on the double-precision path, whose "
                             "probabilities are exact; it has no unnormalised score");
  Job job = checked_job(*model_, Mode::Predict, inputs, states);
  out.resize(Eigen::Index(inputs.size()), model_->vocab_size());
  job.predict = &out;
  job.predict_logits = true;
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
