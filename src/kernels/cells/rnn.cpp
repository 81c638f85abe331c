// The simple RNN (Keras SimpleRNN, PyTorch nn.RNN): h' = act(t + W_hh h), t = W_ih x + b_ih + b_hh.
#include "kernels/cells/cells.hpp"
#include "kernels/cells/generic.hpp"
#include "kernels/cells/updates.hpp"

namespace lstmlm::kernels::cells {

namespace {

class Rnn final : public Generic {
 public:
  Rnn(const Backend& be, const RnnWeights& w)
      : Generic(be, w.input, w.hidden, w.w_ih, w.bias, padded(w.hidden)), act_(w.activation), H_(w.hidden) {
    const FloatBuf zero(static_cast<size_t>(H_), 0.0f);
    hh_ = be.linear(w.w_hh, H_, H_, zero.data());
  }

  int output_width() const override { return H_; }
  int memory_width() const override { return 0; }
  int memory_stride() const override { return 0; }
  int step_phases() const override { return 2; }
  int mid_stride() const override { return std::max(padded(H_), hh_->stride()); }
  size_t step_bytes() const override { return hh_->bytes(); }
  size_t bytes() const override { return step_bytes() + term_bytes(); }

  void step_part(int phase, int part, int parts, int rows, const float* const* h_prev,
                 const float* const* term, float* const*, float* const* h_out, float* const* mid,
                 Scratch& s) const override {
    if (phase == 0) {
      hh_->logits_part(part, parts, rows, prev_rows(rows, h_prev, s), mid, s);
      return;
    }
    const Units u = part_units(H_, part, parts);
    up_.rnn(Rows{rows, H_, u.begin, u.end, term, mid, h_prev, h_out}, act_);
  }

 private:
  const Updates& up_ = updates();
  Activation act_;
  int H_;
  std::unique_ptr<OutputLayer> hh_;
};

}  // namespace

std::unique_ptr<RecurrentLayer> rnn(const Backend& be, const RnnWeights& w) {
  return std::make_unique<Rnn>(be, w);
}

}  // namespace lstmlm::kernels::cells

namespace lstmlm::kernels {

std::unique_ptr<RecurrentLayer> Backend::rnn(const RnnWeights& w) const { return cells::rnn(*this, w); }

float OutputLayer::logit(const float* h, int column, Scratch& s) const {
  FloatBuf row(static_cast<size_t>(stride()));
  float* out = row.data();
  logits(1, &h, &out, s);
  return out[column];
}

}  // namespace lstmlm::kernels
