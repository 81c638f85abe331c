// Next-token sampling: a deterministic random stream per sample and the llama.cpp-like transform chain
//   repeat penalty -> top-k -> top-p -> min-p -> temperature -> draw
// (docs/generation.md). The filters are defined on the model's log-probabilities in double precision; the
// final weights are a float exp of float log-weights and the draw sums them in double in a fixed order,
// all exactly specified operations, so a draw is the same on every ISA (docs/generation.md, "Draw").
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace lstmlm::tasks {

// SplitMix64 (Steele, Lea, Flood 2014): 64-bit state, passes BigCrush, and trivially splittable by
// hashing (seed, stream index) into the starting state.
class Rng {
 public:
  explicit Rng(uint64_t state) : state_(state) {}
  // The stream of sample `index` of a run seeded with `seed`. It depends on nothing else, so sample i
  // draws the same numbers whatever the number of samples, their batch and the thread count.
  static Rng stream(uint64_t seed, uint64_t index);
  uint64_t next();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();

 private:
  uint64_t state_;
};

// The SplitMix64 output function: a bijective 64-bit mixer.
uint64_t splitmix64_mix(uint64_t x);
// A seed from the OS entropy source, for runs without --seed (the CLI prints it).
uint64_t random_seed();

struct SamplerParams {
  float temperature = 1.0f;     // 0 = greedy (argmax, ties -> lowest id)
  int top_k = 0;                // 0 = off
  float top_p = 1.0f;           // 1 = off
  float min_p = 0.0f;           // 0 = off
  float repeat_penalty = 1.0f;  // 1 = off
  int repeat_last_n = 64;       // tokens of history penalised; 0 = none, -1 = the whole history

  // Throws UsageError naming the option when a value is out of range.
  void validate() const;
};

// The distribution a draw is made from, after every transform: the ids with a nonzero weight in ascending
// order and their probabilities (each weight over the draw's total, so they sum to 1 within rounding).
struct SamplingDistribution {
  std::vector<int32_t> ids;
  std::vector<double> probs;
};

class Sampler {
 public:
  explicit Sampler(SamplerParams params);  // validates

  const SamplerParams& params() const { return params_; }
  bool greedy() const { return params_.temperature == 0.0f; }

  // The chain applied to the model's log-probabilities over the vocabulary. `history` holds the tokens
  // seen so far (oldest first); its last repeat_last_n entries are penalised. Greedy: the argmax alone.
  SamplingDistribution distribution(std::span<const float> logprobs, std::span<const int32_t> history) const;

  // The next token. Takes exactly one number from `rng` when sampling and none when greedy, so each
  // sample's stream advances once per generated token.
  int32_t sample(std::span<const float> logprobs, std::span<const int32_t> history, Rng& rng) const;

 private:
  // The chain has no transform but the temperature (no penalty in effect, no top-k/top-p/min-p).
  bool plain(std::span<const int32_t> history) const;
  int32_t sample_plain(std::span<const float> logprobs, Rng& rng) const;
  SamplerParams params_;
};

}  // namespace lstmlm::tasks
