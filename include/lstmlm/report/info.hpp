// `lstmlm info --json`: a model's description as one JSON object (layers, parameters, memory, the kernels
// each precision runs here, tokenizer, provenance), for the CLI and a server's /v1/models alike.
#pragma once
#include <string>

#include "lstmlm/model.hpp"
#include "lstmlm/ngram.hpp"
#include "lstmlm/precision.hpp"

namespace lstmlm::report {

// The object, indented by 2 (nlohmann::json's dump(2)); invalid UTF-8 in names replaced. memory_bytes
// counts the weights packed for `precision` (what a process running it holds).
// `name`: what the "model" field shows (the server shows the directory's last component, never a path of its
// machine); empty: the directory as given.
std::string model_info_json(const Model& m, Precision precision = Precision::Fp32,
                            const std::string& name = {});
// An ARPA n-gram model: {"model", "type": "arpa", "order", "counts" (per order, as \data\ lists them),
// "vocab_size", "unk_added", "memory_bytes"}, indented by 2.
std::string ngram_info_json(const NgramModel& m);

}  // namespace lstmlm::report
