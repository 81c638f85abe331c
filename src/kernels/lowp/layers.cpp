// The low-precision LSTM and output layers, written once over lowp::Gemm (bf16 or int8 weights, one
// kernel per ISA). Gates are laid out canonically, [i f g o] x Hp (Hp = H rounded up to 16 units, the
// padding rows of W zero), so a part of the units is four column ranges of one GEMM. The cell update, the
// input tables and the log-softmax stay fp32 and are the fp32 backend's own code (cell.hpp).
#include <stdexcept>
#include <string>

#include "kernels/cell.hpp"
#include "kernels/cells/cells.hpp"
#include "kernels/lowp/gemm.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm::kernels::lowp {

namespace {

using GemmFactory = std::unique_ptr<Gemm> (*)(Isa, const RowFn&, int, int);

// Blocks [begin, end) of part `part` of `parts`: contiguous, a pure function of its arguments.
Cols part_cols(int blocks, int part, int parts, int offset = 0) {
  return {offset + kBlock * (blocks * part / parts), offset + kBlock * (blocks * (part + 1) / parts)};
}

// Adjacent ranges merged in place (a whole step's four gate ranges are one), so the kernels' widest tiles
// run across the gates; returns the new count.
int coalesce(Cols* c, int n) {
  int m = 0;
  for (int i = 0; i < n; ++i) {
    if (m > 0 && c[m - 1].end == c[i].begin)
      c[m - 1].end = c[i].end;
    else
      c[m++] = c[i];
  }
  return m;
}

class Lstm final : public RecurrentLayer {
 public:
  Lstm(const LstmWeights& w, GemmFactory make, Isa isa)
      : in_(w.input),
        out_(w.proj > 0 ? w.proj : w.hidden),
        Hp_(round_up(w.hidden, kBlock)),
        cell_{w.hidden, w.activation, w.cell_clip, w.cell_activation} {
    const int H = w.hidden, Hp = Hp_;
    auto gate_row = [H, Hp](const Rows& m, int K) {
      return [=](int n) -> const float* {
        const int g = n / Hp, u = n % Hp;
        return u < H ? m.row(static_cast<size_t>(g * H + u), static_cast<size_t>(K)) : nullptr;
      };
    };
    w_hh_ = make(isa, gate_row(w.w_hh, out_), kGates * Hp, out_);
    if (w.w_ih) w_ih_ = make(isa, gate_row(w.w_ih, in_), kGates * Hp, in_);
    bias_.assign(static_cast<size_t>(kGates * Hp), 0.0f);
    for (int g = 0; g < kGates; ++g)
      for (int u = 0; u < H; ++u) bias_[static_cast<size_t>(g * Hp + u)] = w.bias[g * H + u];
    if (w.proj > 0) {
      const Rows& hr = w.w_hr;
      w_hr_ = make(
          isa, [&hr, H](int n) { return hr.row(static_cast<size_t>(n), static_cast<size_t>(H)); }, w.proj, H);
    }
    zero_h_.assign(static_cast<size_t>(output_stride()), 0.0f);
  }

  int input_width() const override { return in_; }
  int output_width() const override { return out_; }
  int memory_width() const override { return cell_.H; }
  int output_stride() const override { return w_hr_ ? w_hr_->padded_out() : Hp_; }
  int memory_stride() const override { return Hp_; }
  int term_width() const override { return kGates * Hp_; }

  void input_term(int rows, const float* const* x, float* const* term, Scratch& s) const override {
    input_term_part(0, 1, rows, x, term, s);
  }
  void input_term_part(int part, int parts, int rows, const float* const* x, float* const* term,
                       Scratch& s) const override {
    if (!w_ih_) throw std::logic_error("lstm: input weights were folded into a table");
    s.init.assign(static_cast<size_t>(rows), bias_.data());
    const Cols c = part_cols(kGates * Hp_ / kBlock, part, parts);
    w_ih_->multiply(rows, x, s.init.data(), term, &c, 1, s);
  }

  void term_from_canonical(const double* z, float* term) const override {
    const int H = cell_.H;
    std::fill(term, term + kGates * Hp_, 0.0f);
    for (int g = 0; g < kGates; ++g)
      for (int u = 0; u < H; ++u) term[g * Hp_ + u] = static_cast<float>(z[g * H + u]);
  }

  void step(int rows, const float* const* h_prev, const float* const* term, float* const* memory,
            float* const* h_out, Scratch& s) const override {
    if (!w_hr_) {
      cells(0, 1, rows, h_prev, term, memory, h_out, s);
      return;
    }
    // m = o tanh(c) into scratch rows after the gates, then h = W_hr m.
    const size_t n = static_cast<size_t>(rows);
    reserve(s, rows, Hp_);
    s.mid.resize(n);
    for (size_t r = 0; r < n; ++r) s.mid[r] = s.floats.data() + gate_floats(rows) + r * size_t(Hp_);
    cells(0, 1, rows, h_prev, term, memory, s.mid.data(), s);
    project(0, 1, rows, s.mid.data(), h_out, s);
  }

  int step_phases() const override { return w_hr_ ? 2 : 1; }
  int mid_stride() const override { return w_hr_ ? Hp_ : 0; }
  void step_part(int phase, int part, int parts, int rows, const float* const* h_prev,
                 const float* const* term, float* const* memory, float* const* h_out, float* const* mid,
                 Scratch& s) const override {
    if (phase == 0)
      cells(part, parts, rows, h_prev, term, memory, w_hr_ ? mid : h_out, s);
    else
      project(part, parts, rows, mid, h_out, s);
  }
  size_t step_bytes() const override { return w_hh_->bytes() + (w_hr_ ? w_hr_->bytes() : 0); }
  size_t term_bytes() const override { return w_ih_ ? w_ih_->bytes() : 0; }
  size_t bytes() const override { return step_bytes() + term_bytes() + bias_.size() * sizeof(float); }

 private:
  size_t gate_floats(int rows) const { return static_cast<size_t>(rows) * static_cast<size_t>(kGates * Hp_); }
  void reserve(Scratch& s, int rows, int extra) const {
    const size_t need = gate_floats(rows) + static_cast<size_t>(rows) * static_cast<size_t>(extra);
    if (s.floats.size() < need) s.floats.resize(need);
  }

  // The units of part `part`: their four gate ranges through W_hh (from the input term), then the cell.
  void cells(int part, int parts, int rows, const float* const* h_prev, const float* const* term,
             float* const* memory, float* const* m, Scratch& s) const {
    const int blocks = Hp_ / kBlock;
    Cols cols[kGates];
    for (int g = 0; g < kGates; ++g) cols[g] = part_cols(blocks, part, parts, g * Hp_);
    if (cols[0].begin == cols[0].end) return;
    reserve(s, rows, w_hr_ ? Hp_ : 0);
    s.out.resize(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) s.out[size_t(r)] = s.floats.data() + size_t(r) * size_t(kGates * Hp_);
    const Cols units = cols[0];
    if (!h_prev) {  // zero rows (a reset state): multiplied like any other, so the bits are those of a zero h
      s.in.assign(static_cast<size_t>(rows), zero_h_.data());
      h_prev = s.in.data();
    }
    w_hh_->multiply(rows, h_prev, term, s.out.data(), cols, coalesce(cols, kGates), s);
    const int H = cell_.H;
    for (int r = 0; r < rows; ++r) {
      const float* z = s.out[size_t(r)];
      for (int u = units.begin; u < units.end && u < H; u += kLanes) {
        const int t = std::min(kLanes, H - u);
        auto gate = [&](int g) { return load_n(z + g * Hp_ + u, t, 0.0f); };
        V16 cn;
        V16 hn = cell(cell_, gate(format::kGateI), gate(format::kGateF), gate(format::kGateG),
                      gate(format::kGateO), load_n(memory[r] + u, t, 0.0f), cn);
        store_n(memory[r] + u, cn, t);
        store_n(m[r] + u, hn, t);
      }
    }
  }
  void project(int part, int parts, int rows, const float* const* m, float* const* h_out, Scratch& s) const {
    const Cols c = part_cols(w_hr_->padded_out() / kBlock, part, parts);
    w_hr_->multiply(rows, m, nullptr, h_out, &c, 1, s);
  }

  int in_, out_, Hp_;
  CellParams cell_;
  std::unique_ptr<Gemm> w_ih_;  // [4 Hp, in]; null when the caller folds the input term into a table
  std::unique_ptr<Gemm> w_hh_;  // [4 Hp, out]
  FloatBuf bias_;               // [4 Hp]
  std::unique_ptr<Gemm> w_hr_;  // [P, H] when projected
  FloatBuf zero_h_;             // the h_prev row of a reset state, output_stride() zeros
};

class Linear final : public OutputLayer {
 public:
  Linear(const Rows& w, int rows, int cols, const float* bias, GemmFactory make, Isa isa)
      : w_(make(
            isa, [&w, cols](int n) { return w.row(static_cast<size_t>(n), static_cast<size_t>(cols)); }, rows,
            cols)) {
    bias_.assign(static_cast<size_t>(w_->padded_out()), 0.0f);
    std::copy(bias, bias + rows, bias_.begin());
  }
  int width() const override { return w_->rows_out(); }
  int stride() const override { return w_->padded_out(); }
  void logits(int rows, const float* const* h, float* const* out, Scratch& s) const override {
    logits_part(0, 1, rows, h, out, s);
  }
  void logits_part(int part, int parts, int rows, const float* const* h, float* const* out,
                   Scratch& s) const override {
    s.init.assign(static_cast<size_t>(rows), bias_.data());
    const Cols c = part_cols(w_->padded_out() / kBlock, part, parts);
    w_->multiply(rows, h, s.init.data(), out, &c, 1, s);
  }
  LogSumExp log_sum_exp(const float* x) const override { return kernels::log_sum_exp(x, w_->rows_out()); }
  size_t bytes() const override { return w_->bytes() + bias_.size() * sizeof(float); }

 private:
  std::unique_ptr<Gemm> w_;
  FloatBuf bias_;  // [padded], zero past N
};

class LowpBackend final : public Backend {
 public:
  LowpBackend(Precision precision, Isa isa, GemmFactory make)
      : name_(std::string(precision_name(precision)) + "/" + std::string(isa_name(isa, precision))),
        isa_(isa),
        make_(make) {}
  std::string_view name() const override { return name_; }
  std::unique_ptr<RecurrentLayer> lstm(const LstmWeights& w) const override {
    // Peepholes and the projection clip: the generic LSTM over this backend's GEMMs.
    if (!w.plain()) return cells::lstm(*this, w);
    return std::make_unique<Lstm>(w, make_, isa_);
  }
  std::unique_ptr<OutputLayer> linear(const Rows& w, int rows, int cols, const float* bias) const override {
    return std::make_unique<Linear>(w, rows, cols, bias, make_, isa_);
  }
  // AMX streams the weights from L3, each weight tile serving 2 row blocks of 16 per pass: split by rows,
  // every thread streams all of them; split by columns, each streams its share, for all the rows.
  int column_split_rows() const override {
#if defined(__x86_64__)
    if (isa_ == Isa::Amx) return 64;
#endif
    return Backend::column_split_rows();
  }

 private:
  std::string name_;
  Isa isa_;
  GemmFactory make_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(Precision precision, Isa isa, bool avx_vnni) {
  if (precision == Precision::Bf16) return std::make_unique<LowpBackend>(precision, isa, &make_bf16_gemm);
  if (precision == Precision::Int8)
    return std::make_unique<LowpBackend>(precision, isa,
                                         avx_vnni ? &make_int8_gemm : &make_int8_gemm_without_avx_vnni);
  throw std::logic_error("lowp: no backend for precision " + std::string(precision_name(precision)));
}

}  // namespace lstmlm::kernels::lowp
