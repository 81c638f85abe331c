// Checks of the model layer shared by Model::load and Model::create (each rule written once).
#pragma once
#include "lstmlm/config.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/vocab.hpp"

namespace lstmlm::model {

// vocab.json holds exactly config.json's vocab_size tokens; throws ModelError naming paths.vocab.
void check_vocab_size(const ModelConfig& config, const Vocab& vocab, const ModelPaths& paths);

}  // namespace lstmlm::model

namespace lstmlm::model {

// Format v5's tensors against the config: class.weight [C, in], class.bias [C], class.word_class [V] with
// every id in [0, C) and each class's words contiguous, direct.weight [output.direct.size], state.h_l{k}
// [output size of layer k]; each absent when the config has none. Throws ModelError naming `file` and the
// tensor.
void check_v5_weights(const ModelConfig& c, const Weights& w, const std::string& file);

}  // namespace lstmlm::model
