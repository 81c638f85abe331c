// The LSTM with what the fused kernels lack: peepholes and a clip of the projected h (TF1's LSTMCell with
// use_peepholes, cell_clip, num_proj and proj_clip; docs/model-format.md). Gate order i, f, g, o:
//   i = rec(t_i + W_hi h + w_ci c), f = rec(t_f + W_hf h + w_cf c), g = act(t_g + W_hg h),
//   c' = clip(f c + i g), o = rec(t_o + W_ho h + w_co c'), m = o act(c'), h' = clip(W_hr m) or m.
#include "kernels/cells/cells.hpp"
#include "kernels/cells/generic.hpp"

namespace lstmlm::kernels::cells {

namespace {

class Lstm final : public Generic {
 public:
  Lstm(const Backend& be, const LstmWeights& w)
      : Generic(be, w.input, 4 * w.hidden, w.w_ih, w.bias, padded(w.proj > 0 ? w.proj : w.hidden)),
        w_(w),
        H_(w.hidden),
        P_(w.proj) {
    const int out = P_ > 0 ? P_ : H_;
    const FloatBuf zero(static_cast<size_t>(4 * H_), 0.0f);
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

  void step_part(int phase, int part, int parts, int rows, const float* const* h_prev, const float* const* term,
                 float* const* memory, float* const* h_out, float* const* mid, Scratch& s) const override {
    if (phase == 0) {
      hh_->logits_part(part, parts, rows, prev_rows(rows, h_prev, s), mid, s);
    } else if (phase == 1) {
      cells(part_units(H_, part, parts), rows, term, memory, h_out, mid);
    } else if (phase == 2) {
      hr_->logits_part(part, parts, rows, mid_in(rows, mid, m_at_, s), h_out, s);
    } else {
      const Units u = part_units(P_, part, parts);
      const float c = *w_.proj_clip;
      for (int r = 0; r < rows; ++r)
        for (int j = u.begin; j < u.end; ++j) h_out[r][j] = std::clamp(h_out[r][j], -c, c);
    }
  }

 private:
  void cells(Units u, int rows, const float* const* term, float* const* memory, float* const* h_out,
             float* const* mid) const {
    const int H = H_;
    const RecurrentActivation ra = w_.activation;
    const Activation ca = w_.cell_activation;
    for (int r = 0; r < rows; ++r) {
      const float *t = term[r], *g = mid[r];
      float* c = memory[r];
      float* m = P_ > 0 ? mid[r] + m_at_ : h_out[r];
      for (int j = u.begin; j < u.end; ++j) {
        const float cp = c[j];
        const float i = activate(ra, t[j] + g[j] + (ci_.empty() ? 0.0f : ci_[size_t(j)] * cp));
        const float f = activate(ra, t[H + j] + g[H + j] + (cf_.empty() ? 0.0f : cf_[size_t(j)] * cp));
        const float gg = activate(ca, t[2 * H + j] + g[2 * H + j]);
        float cn = f * cp + i * gg;
        if (w_.cell_clip) cn = std::clamp(cn, -*w_.cell_clip, *w_.cell_clip);
        const float o = activate(ra, t[3 * H + j] + g[3 * H + j] + (co_.empty() ? 0.0f : co_[size_t(j)] * cn));
        c[j] = cn;
        m[j] = o * activate(ca, cn);
      }
    }
  }

  LstmWeights w_;  // the flags, activations and clips (its pointers are not kept)
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
