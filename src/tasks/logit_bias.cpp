// --logit-bias (tasks/logit_bias.hpp).
#include "lstmlm/tasks/logit_bias.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/request.hpp"

namespace lstmlm::tasks {

void renormalize_logprobs(float* logprobs, int V) {
  double mx = -INFINITY;
  for (int j = 0; j < V; ++j) mx = std::max(mx, double(logprobs[j]));
  if (!std::isfinite(mx)) return;
  double s = 0;
  for (int j = 0; j < V; ++j) s += std::exp(double(logprobs[j]) - mx);
  const double lse = mx + std::log(s);
  for (int j = 0; j < V; ++j) logprobs[j] = static_cast<float>(double(logprobs[j]) - lse);
}

void LogitBias::add(const Model& model, const std::string& token, double value) {
  if (!std::isfinite(value) || std::fabs(value) > kMaxLogitBias)
    throw UsageError::option("logit_bias", ": the bias of " + quoted_word(token) +
                                               " must be a finite number in [-" +
                                               std::to_string(static_cast<int>(kMaxLogitBias)) + ", " +
                                               std::to_string(static_cast<int>(kMaxLogitBias)) + "], got " +
                                               std::to_string(value));
  int32_t id = -1;
  if (auto found = model.vocab().find(token)) {
    id = *found;
  } else {
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    if (ec == std::errc() && end == token.data() + token.size() && !token.empty() && v >= 0 &&
        v < model.vocab_size())
      id = static_cast<int32_t>(v);
  }
  if (id < 0)
    throw UsageError::option("logit_bias", ": " + quoted_word(token) +
                                               " is neither a word of the vocabulary nor a token id in [0, " +
                                               std::to_string(model.vocab_size()) + ")");
  auto at = std::lower_bound(bias_.begin(), bias_.end(), std::make_pair(id, -INFINITY));
  if (at != bias_.end() && at->first == id)
    at->second += static_cast<float>(value);
  else
    bias_.insert(at, {id, static_cast<float>(value)});
}

LogitBias LogitBias::parse(const Model& model, const std::vector<std::string>& items) {
  LogitBias b;
  for (const auto& item : items) {
    const size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError::option("logit_bias", ": expected TOKEN=VALUE, got " + quoted_word(item));
    const std::string num = item.substr(eq + 1);
    char* end = nullptr;
    const double v = std::strtod(num.c_str(), &end);
    if (num.empty() || end != num.c_str() + num.size())
      throw UsageError::option("logit_bias",
                               ": expected TOKEN=VALUE with a number, got " + quoted_word(item));
    b.add(model, item.substr(0, eq), v);
  }
  return b;
}

LogitBias LogitBias::from_pairs(const Model& model,
                                const std::vector<std::pair<std::string, double>>& pairs) {
  LogitBias b;
  for (const auto& [token, v] : pairs) b.add(model, token, v);
  return b;
}

void LogitBias::apply(float* logprobs, int V) const {
  if (bias_.empty()) return;
  for (const auto& [id, v] : bias_)
    if (id < V) logprobs[id] += v;
  renormalize_logprobs(logprobs, V);
}

}  // namespace lstmlm::tasks
