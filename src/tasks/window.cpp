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

size_t PadStates::stride_for(int window_length) {
  return std::max<size_t>(1, (static_cast<size_t>(std::max(window_length, 1)) + 255) / 256);
}

PadStates::PadStates(const Model& model, int window_length)
    : pad_(window_pad_id(model)), stride_(stride_for(window_length)) {
  states_.push_back(State::zeros(model));
}

State PadStates::at(Engine& engine, size_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= states_.size()) {
    // Extend the chain one stride at a time: checkpoint i+1 = checkpoint i advanced over stride pads.
    Sequences pads{std::vector<int32_t>(stride_, pad_)};
    std::vector<State> st;
    while (states_.size() <= index) {
      st.assign(1, states_.back());
      engine.advance(pads, st);
      states_.push_back(std::move(st[0]));
    }
  }
  return states_[index];
}

WindowedPredictor::WindowedPredictor(Engine& engine, WindowOptions w, int batch_size,
                                     std::shared_ptr<PadStates> pads)
    : engine_(&engine), w_(w), pad_(window_pad_id(engine.model())), pads_(std::move(pads)) {
  if (!w_.windowed()) throw UsageError("WindowedPredictor: needs --pad-to N or --window N");
  check_window(w_);
  batch_ = static_cast<size_t>(std::max(1, batch_size));
  if (!pads_ || pads_->pad() != pad_ || pads_->stride() != PadStates::stride_for(w_.length))
    pads_ = std::make_shared<PadStates>(engine.model(), w_.length);
}

std::span<const int32_t> WindowedPredictor::window_of(std::span<const int32_t> context) const {
  const auto n = static_cast<size_t>(w_.length);
  return context.size() > n ? context.subspan(context.size() - n) : context;
}

size_t WindowedPredictor::pads_before(std::span<const int32_t> context) const {
  if (w_.mode != WindowMode::Pad) return 0;
  return static_cast<size_t>(w_.length) - window_of(context).size();
}

void WindowedPredictor::predict(const std::vector<std::span<const int32_t>>& contexts, MatrixRM& out) {
  const Model& model = engine_->model();
  const auto V = static_cast<Eigen::Index>(model.vocab_size());
  out.resize(static_cast<Eigen::Index>(contexts.size()), V);
  if (contexts.empty()) return;
  // Each row: start state = the checkpoint at or below its pad count; input = the remaining pads + the
  // window's tokens.
  const size_t stride = pads_->stride();
  std::vector<size_t> pads(contexts.size());
  for (size_t i = 0; i < contexts.size(); ++i) pads[i] = pads_before(contexts[i]);
  std::vector<size_t> order(contexts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto length = [&](size_t i) { return window_of(contexts[i]).size() + pads[i] % stride; };
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
      inputs[r].assign(pads[i] % stride, pad_);
      inputs[r].insert(inputs[r].end(), win.begin(), win.end());
      states.push_back(pads_->at(*engine_, pads[i] / stride));
    }
    engine_->predict(inputs, states, lp);
    for (size_t r = 0; r < n; ++r)
      out.row(static_cast<Eigen::Index>(order[b + r])) = lp.row(static_cast<Eigen::Index>(r));
  }
}

}  // namespace lstmlm::tasks
