// The options structs' validate(): each option's range from tasks/limits.hpp, each error carrying its
// option's key.
#include <algorithm>
#include <cmath>
#include <string>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/predict.hpp"
#include "lstmlm/tasks/sampler.hpp"
#include "lstmlm/tasks/score.hpp"

namespace lstmlm::tasks {
namespace {

void check_int(const char* key, int64_t v, int64_t lo, int64_t hi, const std::string& meaning = "") {
  if (v < lo || v > hi)
    throw UsageError::option(key, " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]" +
                                      meaning + ", got " + std::to_string(v));
}

void check_batch(int batch_size) { check_int("batch_size", batch_size, 1, tasks::kMaxBatch); }

}  // namespace

void SamplerParams::validate() const {
  auto bad = [](const char* key, const std::string& detail) { throw UsageError::option(key, detail); };
  if (!std::isfinite(temperature) || temperature < 0 || temperature > tasks::kMaxTemperature)
    bad("temperature", " must be in [0, " + std::to_string(static_cast<int>(tasks::kMaxTemperature)) +
                           "] (0 = greedy), got " + std::to_string(temperature));
  if (top_k < 0) bad("top_k", " must be >= 0 (0 = off), got " + std::to_string(top_k));
  if (!(top_p > 0 && top_p <= 1)) bad("top_p", " must be in (0, 1] (1 = off), got " + std::to_string(top_p));
  if (!(min_p >= 0 && min_p <= 1)) bad("min_p", " must be in [0, 1] (0 = off), got " + std::to_string(min_p));
  if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0 || repeat_penalty > tasks::kMaxRepeatPenalty)
    bad("repeat_penalty", " must be in (0, " + std::to_string(static_cast<int>(tasks::kMaxRepeatPenalty)) +
                              "] (1 = off), got " + std::to_string(repeat_penalty));
  check_int("repeat_last_n", repeat_last_n, -1, tasks::kMaxGenerateTokens, " (0 = none, -1 = all)");
}

void GenerateOptions::validate() const {
  check_int("max_tokens", max_tokens, 0, tasks::kMaxGenerateTokens);
  check_int("num_samples", num_samples, 1, tasks::kMaxSamples);
  sampler.validate();
  tasks::check_window(window);
  check_int("beam_size", beam.beam_size, 0, tasks::kMaxBeamSize, " (0 = sample)");
  check_int("n_best", beam.n_best, 1, std::max(beam.beam_size, 1),
            beam.on() ? " (at most " + UsageError::ref("beam_size") + ")"
                      : " (with " + UsageError::ref("beam_size") + ")");
  if (!std::isfinite(beam.length_penalty) || beam.length_penalty < 0 ||
      beam.length_penalty > tasks::kMaxLengthPenalty)
    throw UsageError::option("length_penalty",
                             " must be in [0, " + std::to_string(static_cast<int>(tasks::kMaxLengthPenalty)) +
                                 "] (0 = off), got " + std::to_string(beam.length_penalty));
  check_int("no_repeat_ngram", beam.no_repeat_ngram, 0, tasks::kMaxGenerateTokens, " (0 = off)");
  cache.validate();
  if (cache.on() && window.windowed())
    throw UsageError::option("cache_window", ": not with a fixed input window");
  if (cache.on() && beam.on())
    throw UsageError::option("cache_window",
                             ": not with " + UsageError::ref("beam_size") + " (samples only)");
  check_int("batch_size", beam.batch_size, 0, tasks::kMaxBeamSize, " (0 = every hypothesis in one call)");
  if (!beam.on() && (beam.n_best != 1 || beam.length_penalty != 0 || beam.no_repeat_ngram != 0))
    throw UsageError::option(beam.n_best != 1           ? "n_best"
                             : beam.length_penalty != 0 ? "length_penalty"
                                                        : "no_repeat_ngram",
                             ": applies to a beam search (" + UsageError::ref("beam_size") + " K)");
  if (beam.on() && num_samples != 1)
    throw UsageError::option("num_samples", ": not with " + UsageError::ref("beam_size") + " (" +
                                                UsageError::ref("n_best") + " gives several hypotheses)");
  for (const auto& s : stop)
    if (s.empty()) throw UsageError::option("stop", ": an empty stop string would end every text at once");
}

void ScoreOptions::validate() const {
  check_batch(batch_size);
  check_window(window);
  cache.validate();
  if (cache.on()) {
    auto refuse = [](const std::string& why) { throw UsageError::option("cache_window", why); };
    if (context != ContextMode::Document)
      refuse(": needs " + UsageError::ref("context") + " document (the cache points back into one text)");
    if (window.windowed()) refuse(": not with a fixed input window");
    if (entropy || rank || aggregate == Aggregate::Words)
      refuse(": the cache changes each word's probability, not the model's distribution: not with " +
             UsageError::ref("entropy") + ", " + UsageError::ref("rank") + " or " +
             UsageError::ref("aggregate") + " words");
  }
  if (rank && aggregate == Aggregate::Words)
    throw UsageError::option("rank", ": not defined with " + UsageError::ref("aggregate") +
                                         " words (a word is no entry of a char or subword vocabulary)");
  if (ids_input && normalize != Normalization::None)
    throw UsageError::option("normalize", std::string(" ") + to_string(normalize) +
                                              ": applies to text, not to " + UsageError::ref("ids"));
  if (reverse && context == ContextMode::Document)
    throw UsageError::option("reverse", ": each sentence is reversed on its own: not with " +
                                            UsageError::ref("context") + " document");
  if (softmax == Softmax::Skip) {
    auto refuse = [](const std::string& what) {
      throw UsageError::option("softmax", " skip: not with " + what);
    };
    if (entropy) refuse(UsageError::ref("entropy") + " (it needs the normaliser)");
    if (cache.on()) refuse(UsageError::ref("cache_window") + " (the cache mixes probabilities)");
    if (window.windowed()) refuse("a fixed input window");
  }
}

void PredictOptions::validate() const {
  check_batch(batch_size);
  if (prefix.size() > kMaxPrefixBytes)
    throw UsageError::option("prefix", ": " + std::to_string(prefix.size()) + " bytes, at most " +
                                           std::to_string(kMaxPrefixBytes) + " (the word being typed)");
  check_window(window);
  cache.validate();
  if (cache.on() && window.windowed())
    throw UsageError::option("cache_window", ": not with a fixed input window");
  if (softmax == Softmax::Skip) {
    auto refuse = [](const std::string& what) {
      throw UsageError::option("softmax", " skip: not with " + what + " (it needs probabilities)");
    };
    if (mix) refuse(UsageError::ref("mix"));
    if (boost) refuse(UsageError::ref("boost"));
    if (!prefix.empty()) refuse(UsageError::ref("prefix"));
    if (window.windowed()) refuse("a fixed input window");
    if (cache.on()) refuse(UsageError::ref("cache_window"));
  }
}

}  // namespace lstmlm::tasks
