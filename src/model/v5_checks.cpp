// The shapes and contents of format v5's tensors (a class-factored output, the direct connections, the
// state a reset starts from), for Model::load and Model::create alike.
#include <string>
#include <vector>

#include "format/tensor_names.hpp"
#include "lstmlm/error.hpp"
#include "model/checks.hpp"

namespace lstmlm::model {

namespace {

namespace tn = format::tensor_names;

std::string v5_dims(int64_t a, int64_t b = -1) {
  return "[" + std::to_string(a) + (b >= 0 ? ", " + std::to_string(b) : std::string()) + "]";
}

}  // namespace

void check_v5_weights(const ModelConfig& c, const Weights& w, const std::string& file) {
  auto fail = [&](const std::string& tensor, const std::string& what) {
    throw ModelError::about(file, tensor, what);
  };
  const int64_t C = c.classes, V = c.vocab_size, in = c.decoder_input_size();
  if (C == 0) {
    if (w.class_weight.size() || w.class_bias.size() || !w.word_class.empty())
      fail(tn::class_weight(), "tensor 'class.*' must be absent: config.json has no output.classes");
  } else {
    if (w.class_weight.rows() != C || w.class_weight.cols() != in)
      fail(tn::class_weight(), "tensor 'class.weight' has shape " +
                                   v5_dims(w.class_weight.rows(), w.class_weight.cols()) + ", expected " +
                                   v5_dims(C, in));
    if (w.class_bias.size() != C)
      fail(tn::class_bias(),
           "tensor 'class.bias' has shape " + v5_dims(w.class_bias.size()) + ", expected " + v5_dims(C));
    if (int64_t(w.word_class.size()) != V)
      fail(tn::word_class(), "tensor 'class.word_class' has shape " + v5_dims(int64_t(w.word_class.size())) +
                                 ", expected " + v5_dims(V));
    // A class's words are one block of the output: the exact path computes a class's logits as a range.
    std::vector<int32_t> last(size_t(C), -1);
    for (int32_t i = 0; i < V; ++i) {
      const int32_t k = w.word_class[size_t(i)];
      if (k < 0 || k >= C)
        fail(tn::word_class(), "tensor 'class.word_class': word " + std::to_string(i) + " has class " +
                                   std::to_string(k) + ", outside [0, " + std::to_string(C) + ")");
      if (last[size_t(k)] >= 0 && last[size_t(k)] != i - 1)
        fail(tn::word_class(), "tensor 'class.word_class': the words of class " + std::to_string(k) +
                                   " are not contiguous (word " + std::to_string(i) + " follows word " +
                                   std::to_string(last[size_t(k)]) + " with other classes between)");
      last[size_t(k)] = i;
    }
  }
  if (c.direct_size == 0) {
    if (w.direct.size() != 0)
      fail(tn::direct_weight(), "tensor 'direct.weight' must be absent: config.json has no output.direct");
  } else if (int64_t(w.direct.size()) != c.direct_size) {
    fail(tn::direct_weight(), "tensor 'direct.weight' has shape " + v5_dims(int64_t(w.direct.size())) +
                                  ", expected " + v5_dims(c.direct_size) + " (output.direct.size)");
  }
  if (!w.initial_h.empty()) {
    if (w.initial_h.size() != c.layers.size())
      fail(tn::initial_h(0), "state.h_l{k}: one tensor per layer or none");
    for (size_t k = 0; k < c.layers.size(); ++k)
      if (w.initial_h[k].size() != c.layers[k].output_size())
        fail(tn::initial_h(k), "tensor '" + tn::initial_h(k) + "' has shape " +
                                   v5_dims(w.initial_h[k].size()) + ", expected " +
                                   v5_dims(c.layers[k].output_size()));
  }
}

}  // namespace lstmlm::model
