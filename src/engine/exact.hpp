// The double-precision path: models whose output is class-factored or has rnnlm's direct connections, or
// that compute with rnnlm's exp (ModelConfig::exact_path). Each row runs alone, step by step, in double with
// each sum in one fixed order, as rnnlm 0.3e computes: its probabilities to the last printed digit. Scoring
// computes only the target's class row and the words of its class; a full distribution every class's words.
#pragma once
#include "engine/forward.hpp"
#include "lstmlm/model.hpp"

namespace lstmlm::engine {

// Runs every row of `job` on the calling thread.
void exact_forward(const Model& model, const Job& job);

}  // namespace lstmlm::engine
