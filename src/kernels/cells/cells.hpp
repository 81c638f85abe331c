// The cells written once over a backend's linear layers (Backend::linear): GRU, simple RNN, and the LSTM
// with peepholes or a projection clip. Each step is the backend's GEMMs (so every precision and ISA runs
// them, packed its own way) followed by an element-wise update in plain C++, each element computed by the
// same code whatever the rows, parts and threads, which keeps the engine's batch and thread invariance.
// A backend may override Backend::gru / rnn with a fused kernel; these are what it gets by default.
#pragma once
#include <memory>

#include "kernels/backend.hpp"

namespace lstmlm::kernels::cells {

std::unique_ptr<RecurrentLayer> gru(const Backend& be, const GruWeights& w);
std::unique_ptr<RecurrentLayer> rnn(const Backend& be, const RnnWeights& w);
// An LSTM with peepholes (w.w_ci etc.) and/or a projection clip: how the low precisions run one (the fp32
// kernels fuse them).
std::unique_ptr<RecurrentLayer> lstm(const Backend& be, const LstmWeights& w);

}  // namespace lstmlm::kernels::cells
