// What the generic cells share: the input term through the backend's linear layer (or a folded table),
// the zero row of a reset state, and a step run as its phases one after another.
#pragma once
#include <algorithm>
#include <memory>

#include "kernels/backend.hpp"
#include "kernels/cells/layout.hpp"

namespace lstmlm::kernels::cells {

class Generic : public RecurrentLayer {
 public:
  // gates: the G * hidden floats of the input term; w_ih null when the caller folds it.
  Generic(const Backend& be, int input, int gates, const Rows& w_ih, const float* bias, int out_stride)
      : in_(input), gates_(gates), zero_(static_cast<size_t>(out_stride), 0.0f) {
    if (w_ih) ih_ = be.linear(w_ih, gates, input, bias);
    term_width_ = std::max(padded(gates), ih_ ? ih_->stride() : 0);
  }

  int input_width() const override { return in_; }
  int term_width() const override { return term_width_; }
  int output_stride() const override { return static_cast<int>(zero_.size()); }

  void input_term(int rows, const float* const* x, float* const* term, Scratch& s) const override {
    ih_->logits(rows, x, term, s);
  }
  void input_term_part(int part, int parts, int rows, const float* const* x, float* const* term,
                       Scratch& s) const override {
    ih_->logits_part(part, parts, rows, x, term, s);
  }
  void term_from_canonical(const double* canonical, float* term) const override {
    std::fill(term, term + term_width_, 0.0f);
    for (int i = 0; i < gates_; ++i) term[i] = static_cast<float>(canonical[i]);
  }
  size_t term_bytes() const override { return ih_ ? ih_->bytes() : 0; }

  // The whole step: every phase as one part, the mid rows in the scratch.
  void step(int rows, const float* const* h_prev, const float* const* term, float* const* memory,
            float* const* h_out, Scratch& s) const override {
    const size_t n = static_cast<size_t>(rows), stride = static_cast<size_t>(std::max(mid_stride(), 1));
    if (s.cells.size() < n * stride) s.cells.resize(n * stride);
    s.cell_mid.resize(n);
    for (size_t r = 0; r < n; ++r) s.cell_mid[r] = s.cells.data() + r * stride;
    // step_part uses cell_in and cell_out, never cell_mid.
    for (int phase = 0; phase < step_phases(); ++phase)
      step_part(phase, 0, 1, rows, h_prev, term, memory, h_out, s.cell_mid.data(), s);
  }

 protected:
  // h_prev, or the zero rows of a reset state (null h_prev), for a linear to read.
  const float* const* prev_rows(int rows, const float* const* h_prev, Scratch& s) const {
    if (h_prev) return h_prev;
    s.cell_in.assign(static_cast<size_t>(rows), zero_.data());
    return s.cell_in.data();
  }
  const float* prev(const float* const* h_prev, int r) const { return h_prev ? h_prev[r] : zero_.data(); }
  // Rows of mid from `offset` floats on.
  float* const* mid_at(int rows, float* const* mid, int offset, Scratch& s) const {
    s.cell_out.resize(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) s.cell_out[size_t(r)] = mid[r] + offset;
    return s.cell_out.data();
  }
  const float* const* mid_in(int rows, float* const* mid, int offset, Scratch& s) const {
    s.cell_in.resize(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) s.cell_in[size_t(r)] = mid[r] + offset;
    return s.cell_in.data();
  }

 private:
  int in_, gates_, term_width_ = 0;
  std::unique_ptr<OutputLayer> ih_;  // null when folded
  FloatBuf zero_;                    // output_stride() zeros: the h of a reset state
};

}  // namespace lstmlm::kernels::cells
