// What sampling and beam search share around a step: the steered row (boost, logit bias), the generated
// text as it grows (stop strings), and the constraint's refusal.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lstmlm/tasks/generate.hpp"
#include "lstmlm/tasks/window.hpp"

namespace lstmlm::tasks::detail {

// The row a choice is made from: `row` itself when nothing steers, else `buf` holding the row with the
// boost (given `history`) and the logit bias applied.
std::span<const float> steer(const GenerateOptions& o, std::span<const int32_t> history,
                             std::span<const float> row, std::vector<float>& buf);

// The generated text, token by token, as the records' `text` joins it (no prompt).
struct TextTail {
  std::optional<std::string> prev;
  std::string text;
  // Appends a token's text; true when it completes one of `stops` (then `hit` names it).
  bool append(const Tokenizer& tok, int32_t id, const std::vector<std::string>& stops, std::string& hit);
};

// The prompt fed once: the state after it (the zero state for a windowed model, which reads its window
// each step) and the distribution of the first generated token, row 0 of `lp`.
void prefill(Engine& engine, std::optional<WindowedPredictor>& windowed, const std::vector<int32_t>& context,
             std::vector<State>& states, MatrixRM& lp);

// The UsageError of a constraint that cannot be met within max_tokens: no token at the last step ends in a
// match after `prefix`.
[[noreturn]] void refuse_too_short(const GenerateOptions& o, const std::string& prefix);

// The UsageError of a constraint that admits no token (nor the end) after `prefix` at step `step` (1-based).
[[noreturn]] void refuse_dead_end(const GenerateOptions& o, int step, const std::string& prefix);

}  // namespace lstmlm::tasks::detail
