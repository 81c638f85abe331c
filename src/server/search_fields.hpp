// The /v1/generate fields of beam search, biasing and constraints, read into a request's options.
#pragma once
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/generate.hpp"
#include "server/request.hpp"

namespace lstmlm::server {

// beam_size, n_best, length_penalty, no_repeat_ngram, logit_bias ({"TOKEN": VALUE}), allowed_words (a list
// of words), regex, stop (a list of strings). Ranges are the library's (UsageError naming the field);
// a list of more than `max_items` entries is refused.
void read_search_fields(Body& b, const Model& model, tasks::GenerateOptions& g, size_t max_items);

}  // namespace lstmlm::server
