// The steps sampling and beam search share (tasks/steer.hpp).
#include "tasks/steer.hpp"

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"

namespace lstmlm::tasks::detail {

std::span<const float> steer(const GenerateOptions& o, std::span<const int32_t> history,
                             std::span<const float> row, std::vector<float>& buf) {
  if (!o.boost && !o.bias) return row;
  buf.assign(row.begin(), row.end());
  const int V = static_cast<int>(row.size());
  if (o.boost) o.boost->apply(history, buf.data(), V);
  if (o.bias) o.bias->apply(buf.data(), V);
  return buf;
}

bool TextTail::append(const Tokenizer& tok, int32_t id, const std::vector<std::string>& stops,
                      std::string& hit) {
  if (tok.is_special(id)) return false;
  const std::string& t = tok.vocab().token(id);
  const std::string piece = tok.join_text(prev, t);
  prev = t;
  text += piece;
  // Only a match that ends in the new piece is new.
  for (const auto& s : stops) {
    if (s.empty()) continue;
    const size_t from =
        text.size() >= piece.size() + s.size() ? text.size() - piece.size() - s.size() + 1 : 0;
    if (text.find(s, from) != std::string::npos) {
      hit = s;
      return true;
    }
  }
  return false;
}

void refuse_dead_end(const GenerateOptions& o, int step, const std::string& prefix) {
  throw UsageError::option(o.constraint->key(),
                           ": no token can continue the text at step " + std::to_string(step) + " after \"" +
                               printable(prefix, 80) + "\", and it does not match there");
}

void prefill(Engine& engine, std::optional<WindowedPredictor>& windowed, const std::vector<int32_t>& context,
             std::vector<State>& states, MatrixRM& lp) {
  states.assign(1, State::zeros(engine.model()));
  if (windowed)
    windowed->predict({std::span<const int32_t>(context)}, lp);
  else
    engine.predict(Sequences{context}, states, lp);
}

void refuse_too_short(const GenerateOptions& o, const std::string& prefix) {
  throw UsageError::option("max_tokens", " " + std::to_string(o.max_tokens) + ": no text that " +
                                             UsageError::ref(o.constraint->key()) + " matches ends within " +
                                             std::to_string(o.max_tokens) + " tokens after \"" +
                                             printable(prefix, 80) + "\"");
}

}  // namespace lstmlm::tasks::detail
