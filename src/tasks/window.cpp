#include "lstmlm/tasks/window.hpp"

#include <algorithm>
#include <numeric>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/input.hpp"

namespace lstmlm::tasks {

void check_window(const WindowOptions& w) {
  if (!w.windowed()) return;
  if (w.length < 1 || w.length > kMaxWindowLength)
    throw UsageError::option(
        w.mode == WindowMode::Pad ? "pad_to" : "window",
        " " + std::to_string(w.length) + ": not in [1, " + std::to_string(kMaxWindowLength) + "]");
}

int32_t window_pad_id(const Model& model) {
  if (auto id = model.tokenizer().pad_id()) return *id;
  // No pad_id: a one-hot model pads with the zero input vector (the engine's input id V), as Keras'
  // pad_sequences pads a one-hot array; an embedding model with id 0, pad_sequences' value.
  return model.config().embedding_dim == 0 ? model.vocab_size() : 0;
}

std::string window_flag(const WindowOptions& w) {
  switch (w.mode) {
    case WindowMode::Pad:
      return "--pad-to " + std::to_string(w.length);
    case WindowMode::Window:
      return "--window " + std::to_string(w.length);
    case WindowMode::Stateful:
      break;
  }
  return "--stateful";
}

WindowedPredictor::WindowedPredictor(Engine& engine, WindowOptions w, int batch_size)
    : engine_(&engine), w_(w), pad_(window_pad_id(engine.model())) {
  if (!w_.windowed()) throw UsageError("WindowedPredictor: needs --pad-to N or --window N");
  check_window(w_);
  batch_ = static_cast<size_t>(std::max(1, batch_size));
  // At most about 1024 checkpoints, so their memory stays bounded for any N; a row feeds fewer than
  // stride_ extra pads.
  const auto n = static_cast<size_t>(w_.length);
  stride_ = std::max<size_t>(16, (n + 1023) / 1024);
  checkpoints_.push_back(State::zeros(engine.model()));
}

std::span<const int32_t> WindowedPredictor::window_of(std::span<const int32_t> context) const {
  const auto n = static_cast<size_t>(w_.length);
  return context.size() > n ? context.subspan(context.size() - n) : context;
}

size_t WindowedPredictor::pads_before(std::span<const int32_t> context) const {
  if (w_.mode != WindowMode::Pad) return 0;
  return static_cast<size_t>(w_.length) - window_of(context).size();
}

const State& WindowedPredictor::checkpoint(size_t index) {
  if (index < checkpoints_.size()) return checkpoints_[index];
  // Extend the chain one stride at a time: checkpoint i+1 = checkpoint i advanced over stride_ pads.
  Sequences pads{std::vector<int32_t>(stride_, pad_)};
  std::vector<State> st;
  checkpoints_.reserve(index + 1);
  while (checkpoints_.size() <= index) {
    st.assign(1, checkpoints_.back());
    engine_->advance(pads, st);
    checkpoints_.push_back(std::move(st[0]));
  }
  return checkpoints_[index];
}

void WindowedPredictor::predict(const std::vector<std::span<const int32_t>>& contexts, MatrixRM& out) {
  const Model& model = engine_->model();
  const auto V = static_cast<Eigen::Index>(model.vocab_size());
  out.resize(static_cast<Eigen::Index>(contexts.size()), V);
  if (contexts.empty()) return;
  // Each row: start state = the checkpoint at or below its pad count; input = the remaining pads + the
  // window's tokens.
  std::vector<size_t> pads(contexts.size());
  for (size_t i = 0; i < contexts.size(); ++i) pads[i] = pads_before(contexts[i]);
  if (w_.mode == WindowMode::Pad) {
    size_t top = 0;
    for (size_t p : pads) top = std::max(top, p / stride_);
    checkpoint(top);  // computes the chain once, before the references below are taken
  }
  std::vector<size_t> order(contexts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto length = [&](size_t i) { return window_of(contexts[i]).size() + pads[i] % stride_; };
  longest_first(order, length);
  Sequences inputs;
  std::vector<State> states;
  MatrixRM lp;
  for (size_t b = 0; b < order.size(); b += batch_) {
    const size_t n = std::min(batch_, order.size() - b);
    inputs.assign(n, {});
    states.clear();
    for (size_t r = 0; r < n; ++r) {
      const size_t i = order[b + r];
      auto win = window_of(contexts[i]);
      inputs[r].assign(pads[i] % stride_, pad_);
      inputs[r].insert(inputs[r].end(), win.begin(), win.end());
      states.push_back(checkpoint(pads[i] / stride_));
    }
    engine_->predict(inputs, states, lp);
    for (size_t r = 0; r < n; ++r)
      out.row(static_cast<Eigen::Index>(order[b + r])) = lp.row(static_cast<Eigen::Index>(r));
  }
}

}  // namespace lstmlm::tasks
