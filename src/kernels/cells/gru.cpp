// The GRU (gate order r, z, n), both conventions (docs/model-format.md):
//   reset_after:  n = act(t_n + r (W_hn h + b_hn))   PyTorch nn.GRU, Keras reset_after=True, ONNX lbr=1
//   reset before: n = act(t_n + W_hn (r h))           Keras <= 2.2, TF1 GRUCell, ONNX lbr=0
// with r = rec(t_r + W_hr h ...), z likewise, h' = (1 - z) n + z h, t the input term (W_ih x + bias).
#include <vector>

#include "kernels/cells/cells.hpp"
#include "kernels/cells/generic.hpp"
#include "kernels/cells/updates.hpp"

namespace lstmlm::kernels::cells {

namespace {

class Gru final : public Generic {
 public:
  Gru(const Backend& be, const GruWeights& w)
      : Generic(be, w.input, 3 * w.hidden, w.w_ih, w.bias, padded(w.hidden)), w_(w), H_(w.hidden) {
    w_.w_ih = w_.w_hh = nullptr;  // a source of rows is read while packing, never kept
    if (w.reset_after) {
      hh_ = be.linear(w.w_hh, 3 * H_, H_, w.bias_hh);
      mid_stride_ = std::max(padded(3 * H_), hh_->stride());
    } else {
      const std::vector<float> zero(static_cast<size_t>(2 * H_), 0.0f);
      hh_ = be.linear(w.w_hh, 2 * H_, H_, zero.data());                               // r and z
      hn_ = be.linear(w.w_hh.from(2 * size_t(H_), size_t(H_)), H_, H_, zero.data());  // n, applied to r h
      rh_at_ = std::max(padded(2 * H_), hh_->stride());
      gn_at_ = rh_at_ + padded(H_);
      mid_stride_ = gn_at_ + std::max(padded(H_), hn_->stride());
    }
  }

  int output_width() const override { return H_; }
  int memory_width() const override { return 0; }
  int memory_stride() const override { return 0; }
  int step_phases() const override { return w_.reset_after ? 2 : 4; }
  int mid_stride() const override { return mid_stride_; }
  size_t step_bytes() const override { return hh_->bytes() + (hn_ ? hn_->bytes() : 0); }
  size_t bytes() const override { return step_bytes() + term_bytes(); }

  void step_part(int phase, int part, int parts, int rows, const float* const* h_prev,
                 const float* const* term, float* const*, float* const* h_out, float* const* mid,
                 Scratch& s) const override {
    const Units u = part_units(H_, part, parts);
    Rows a{rows, H_, u.begin, u.end, term, mid, h_prev, h_out};
    if (phase == 0) {  // the recurrent product of r and z (and n, reset_after)
      hh_->logits_part(part, parts, rows, prev_rows(rows, h_prev, s), mid, s);
    } else if (w_.reset_after) {
      up_.gru_after(a, w_.activation, w_.cell_activation);
    } else if (phase == 1) {  // r h, the input of W_hn
      a.out = mid_at(rows, mid, rh_at_, s);
      up_.gru_reset(a, w_.activation);
    } else if (phase == 2) {
      hn_->logits_part(part, parts, rows, mid_in(rows, mid, rh_at_, s), mid_at(rows, mid, gn_at_, s), s);
    } else {
      up_.gru_before(a, mid_in(rows, mid, gn_at_, s), w_.activation, w_.cell_activation);
    }
  }

 private:
  const Updates& up_ = updates();
  GruWeights w_;  // the flags and activations (its pointers are not kept, its sources cleared)
  int H_;
  std::unique_ptr<OutputLayer> hh_, hn_;
  int rh_at_ = 0, gn_at_ = 0, mid_stride_ = 0;
};

}  // namespace

std::unique_ptr<RecurrentLayer> gru(const Backend& be, const GruWeights& w) {
  return std::make_unique<Gru>(be, w);
}

}  // namespace lstmlm::kernels::cells

namespace lstmlm::kernels {

std::unique_ptr<RecurrentLayer> Backend::gru(const GruWeights& w) const { return cells::gru(*this, w); }

}  // namespace lstmlm::kernels
