// One hypothesis of an n-best list in the jsonl form (docs/rescoring.md): {"utt": ..., "hyp": ...,
// "id"?: ..., "recording"?: ..., "scores"?: {"name": number | [numbers]}}, shared by `lstmlm rescore` and
// the server's /v1/rescore so both read the same records the same way.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/tasks/rescore.hpp"

namespace lstmlm::tasks {

// Parses one record into `h` (utt, text, id, recording, scores; n and line are the caller's). `names` holds
// the score names of the first record (nullopt before it: this record's become them); every record needs
// the same. Throws InputError prefixed with `where` ("FILE:LINE: ").
void parse_jsonl_hypothesis(std::string_view line, std::optional<std::vector<std::string>>& names,
                            const std::string& where, Hypothesis& h);

}  // namespace lstmlm::tasks
