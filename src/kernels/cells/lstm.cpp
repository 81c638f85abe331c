// The LSTM with what the fused kernels lack: peepholes and a clip of the projected h (TF1's LSTMCell with
// use_peepholes, cell_clip, num_proj and proj_clip; docs/model-format.md). Gate order i, f, g, o:
//   i = rec(t_i + W_hi h + w_ci c), f = rec(t_f + W_hf h + w_cf c), g = act(t_g + W_hg h),
//   c' = clip(f c + i g), o = rec(t_o + W_ho h + w_co c'), m = o act(c'), h' = clip(W_hr m) or m.
#include <algorithm>

#include "kernels/cells/cells.hpp"
#include "kernels/cells/generic.hpp"
#include "kernels/cells/updates.hpp"

namespace lstmlm::kernels::cells {

namespace {

class Lstm final : public Generic {
 public:
  Lstm(const Backend& be, const LstmWeights& w)
      : Generic(be, w.input, 4 * w.hidden, w.w_ih, w.bias, padded(w.proj > 0 ? w.proj : w.hidden)),
        cell_{w.hidden, w.activation, w.cell_clip, w.cell_activation},
        w_(w),
        H_(w.hidden),
        P_(w.proj) {
    const int out = P_ > 0 ? P_ : H_;
    w_.w_ih = w_.w_hh = w_.w_hr = nullptr;  // a source of rows is read while packing, never kept
    // The zero bias of W_hh's 4H rows and of W_hr's P: a config built in code may have P > 4H.
    const FloatBuf zero(static_cast<size_t>(std::max(4 * H_, P_)), 0.0f);
    hh_ = be.linear(w.w_hh, 4 * H_, out, zero.data());
    m_at_ = std::max(padded(4 * H_), hh_->stride());
    mid_stride_ = m_at_;
    if (P_ > 0) {
      hr_ = be.linear(w.w_hr, P_, H_, zero.data());
      if (hr_->stride() > output_stride()) throw std::logic_error("cells::Lstm: projection stride");
      mid_stride_ += padded(H_);
    }
    auto copy = [this](const float* v, FloatBuf& to) {
      if (v) to.assign(v, v + H_);
    };
    copy(w.w_ci, ci_);
    copy(w.w_cf, cf_);
    copy(w.w_co, co_);
  }

  int output_width() const override { return P_ > 0 ? P_ : H_; }
  int memory_width() const override { return H_; }
  int memory_stride() const override { return padded(H_); }
  int step_phases() const override { return P_ == 0 ? 2 : w_.proj_clip ? 4 : 3; }
  int mid_stride() const override { return mid_stride_; }
  size_t step_bytes() const override { return hh_->bytes() + (hr_ ? hr_->bytes() : 0); }
  size_t bytes() const override {
    return step_bytes() + term_bytes() + (ci_.size() + cf_.size() + co_.size()) * sizeof(float);
  }

  void step_part(int phase, int part, int parts, int rows, const float* const* h_prev,
                 const float* const* term, float* const* memory, float* const* h_out, float* const* mid,
                 Scratch& s) const override {
    if (phase == 0) {
      hh_->logits_part(part, parts, rows, prev_rows(rows, h_prev, s), mid, s);
    } else if (phase == 1) {
      const Units u = part_units(H_, part, parts);
      const Rows a{rows, H_, u.begin, u.end, term, mid, h_prev, P_ > 0 ? mid_at(rows, mid, m_at_, s) : h_out};
      up_.lstm(a, memory, cell_, ci_.empty() ? nullptr : ci_.data(), cf_.empty() ? nullptr : cf_.data(),
               co_.empty() ? nullptr : co_.data());
    } else if (phase == 2) {
      hr_->logits_part(part, parts, rows, mid_in(rows, mid, m_at_, s), h_out, s);
    } else {
      const Units u = part_units(P_, part, parts);
      up_.clip(rows, h_out, u.begin, u.end, *w_.proj_clip);
    }
  }

 private:
  const Updates& up_ = updates();
  CellParams cell_;
  LstmWeights w_;  // the flags, activations and clips (its pointers are not kept, its sources cleared)
  int H_, P_;
  std::unique_ptr<OutputLayer> hh_, hr_;
  FloatBuf ci_, cf_, co_;
  int m_at_ = 0, mid_stride_ = 0;
};

}  // namespace

std::unique_ptr<RecurrentLayer> lstm(const Backend& be, const LstmWeights& w) {
  return std::make_unique<Lstm>(be, w);
}

}  // namespace lstmlm::kernels::cells
