// lmzoo: lm-zoo's get-surprisals table (header "sentence_id\ttoken_id\ttoken\tsurprisal", tab-separated,
// surprisal in bits; docs/scoring.md says where that layout is defined). Its bytes are the tsv writer's:
// what makes it lm-zoo's is the table `lstmlm score` declares for it (cli/score_records.cpp).
#include "emit.hpp"

namespace lstmlm::cli {

std::unique_ptr<Writer> make_tsv_writer();

std::unique_ptr<Writer> make_lmzoo_writer() { return make_tsv_writer(); }

}  // namespace lstmlm::cli
