// Beam search over a model's tokens (docs/generation.md): the K best hypotheses are kept at every step and
// advanced as one engine batch; the N best finished ones are returned with their log-probabilities.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/tasks/generate.hpp"

namespace lstmlm::tasks {

struct BeamHypothesis : GeneratedSample {
  // What the search ranks by: the sum of the steered log-probs (after the boost and the logit bias; the
  // model's own when there are none) over GNMT's length penalty. GeneratedSample::total_logprob is the
  // model's.
  double score = 0;
};

struct BeamResult {
  Prompt prompt;
  std::vector<BeamHypothesis> hypotheses;  // best first; `index` is the rank (0 = best)
};

// GNMT's length penalty ((5 + len) / 6)^alpha.
double length_penalty(double alpha, size_t len);

// Beam search with options.beam (on()). Each step takes, over every hypothesis and token the constraint and
// no_repeat_ngram allow, the K - F best continuations by summed log-prob (F: hypotheses finished so far;
// ties: the earlier hypothesis, then the lower id); a continuation ending at eos, at a stop string, or
// where the constraint admits nothing more, is finished, the others advance together. After max_tokens
// steps the unfinished ones finish too (with a constraint, only those it accepts). The N best finished
// hypotheses by score are returned. The hypotheses advance in calls of beam.batch_size rows, and the engine
// is batch- and thread-invariant, so the result is bit-identical for any batch size and thread count.
// `between_steps`, when set, is called after each step (an interrupt check). The sampler's options are not
// used. Throws UsageError naming the constraint's option when no hypothesis can satisfy it.
BeamResult beam_search(Engine& engine, const GenerateOptions& options,
                       const std::function<void()>& between_steps = {});

}  // namespace lstmlm::tasks
