#include "server/search_fields.hpp"

#include <string>
#include <utility>
#include <vector>

#include "lstmlm/tasks/constraint.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/logit_bias.hpp"
#include "server/http_error.hpp"

namespace lstmlm::server {

void read_search_fields(Body& b, const Model& model, tasks::GenerateOptions& g, size_t max_items) {
  auto& beam = g.beam;
  beam.beam_size = static_cast<int>(b.integer("beam_size", 0, tasks::kMaxBeamSize).value_or(0));
  beam.n_best = static_cast<int>(b.integer("n_best", 1, tasks::kMaxBeamSize).value_or(1));
  beam.length_penalty =
      static_cast<float>(b.number("length_penalty", 0, tasks::kMaxLengthPenalty).value_or(0));
  beam.no_repeat_ngram =
      static_cast<int>(b.integer("no_repeat_ngram", 0, tasks::kMaxGenerateTokens).value_or(0));
  if (const nlohmann::json* bias = b.raw("logit_bias")) {
    if (!bias->is_object()) throw HttpError(400, "field 'logit_bias': an object {\"TOKEN\": VALUE, ...}");
    if (bias->size() > max_items)
      throw HttpError(413, "field 'logit_bias': more than " + std::to_string(max_items) + " entries");
    std::vector<std::pair<std::string, double>> pairs;
    for (const auto& [token, v] : bias->items()) {
      if (!v.is_number())
        throw HttpError(400, "field 'logit_bias': the value of \"" + token + "\" is not a number");
      pairs.emplace_back(token, v.get<double>());
    }
    if (!pairs.empty())
      g.bias = std::make_shared<tasks::LogitBias>(tasks::LogitBias::from_pairs(model, pairs));
  }
  tasks::ConstraintSpec spec;
  if (auto words = b.strings("allowed_words", max_items))
    spec.allowed = tasks::Constraint::allowed_ids(model, *words, "the list");
  spec.regex = b.str("regex").value_or("");
  if (spec.allowed || !spec.regex.empty())
    g.constraint = tasks::Constraint::create(model, spec, g.end_token(model));
  if (auto stop = b.strings("stop", 16)) g.stop = *stop;
}

}  // namespace lstmlm::server
