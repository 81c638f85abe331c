// Checks of the model layer shared by Model::load and Model::create (each rule written once).
#pragma once
#include "lstmlm/config.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/vocab.hpp"

namespace lstmlm::model {

// vocab.json holds exactly config.json's vocab_size tokens; throws ModelError naming paths.vocab.
void check_vocab_size(const ModelConfig& config, const Vocab& vocab, const ModelPaths& paths);

}  // namespace lstmlm::model
