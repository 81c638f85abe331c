// lmzoo: lm-zoo's get-surprisals table (header "sentence_id\ttoken_id\ttoken\tsurprisal", tab-separated,
// surprisal in bits; docs/scoring.md says where that layout is defined). Its bytes are the tsv writer's:
// what makes it lm-zoo's is the table `lstmlm score` declares for it (src/report/score_records.cpp).
#include "lstmlm/report/record.hpp"

namespace lstmlm::report {

std::unique_ptr<Writer> make_tsv_writer();

std::unique_ptr<Writer> make_lmzoo_writer() { return make_tsv_writer(); }

}  // namespace lstmlm::report
