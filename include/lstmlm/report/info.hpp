// `lstmlm info --json`: a model's description as one JSON object (layers, parameters, memory, the kernels
// each precision runs here, tokenizer, provenance), for the CLI and a server's /v1/models alike.
#pragma once
#include <string>

#include "lstmlm/model.hpp"

namespace lstmlm::report {

// The object, indented by 2 (nlohmann::json's dump(2)); invalid UTF-8 in names replaced.
std::string model_info_json(const Model& m);

}  // namespace lstmlm::report
