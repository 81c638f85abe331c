#include "score_jsonl.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "emit.hpp"
#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/report/jsonl.hpp"
#include "lstmlm/tasks/jsonl.hpp"
#include "output.hpp"
#include "progress.hpp"

namespace lstmlm::cli {

int run_score_jsonl(const JsonlRun& r) {
  check_readable(r.files);
  tasks::JsonlOptions opt;
  opt.text_field = r.text_field;
  opt.score = r.score;
  opt.min_perplexity = r.min_perplexity;
  opt.max_perplexity = r.max_perplexity;
  auto model = load_model(r.model_dir);
  note_oov_policy(r.score.oov, *model);
  opt.score.window = resolve_window(r.window, *model);
  Engine engine(model, engine_options(r.threads, r.precision));
  tasks::JsonlScorer scorer(engine, opt);
  Emitter out(Format::Jsonl);
  Progress progress("score", r.progress, r.files);
  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // Documents per block: enough lines for full batches in sentence mode, a bounded memory per block.
  const size_t block = 1024;
  LineReader in(r.files);
  std::vector<std::string> lines;
  uint64_t first = 0;
  int64_t documents = 0, kept = 0, filtered = 0, errors = 0;
  tasks::ScoreSummary all;  // every scored document (kept or filtered)
  while (in.next_file()) {
    while (in.next_block(lines, block, first)) {
      const auto docs = scorer.score(lines, in.source(), first);
      for (size_t i = 0; i < docs.size(); ++i) {
        const auto& d = docs[i];
        ++documents;
        switch (d.status) {
          case tasks::JsonlDocument::Status::Kept:
            ++kept;
            out.raw(report::jsonl_document(lines[i], d));
            out.raw("\n");
            all.add(d.total);
            break;
          case tasks::JsonlDocument::Status::Filtered:
            ++filtered;
            all.add(d.total);
            break;
          case tasks::JsonlDocument::Status::Error:
            ++errors;
            if (!r.skip_errors) {
              out.write_pending();  // every document before the bad one, then the error
              throw InputError(d.error + " (--on-error skip skips such documents)");
            }
            print_diagnostic("lstmlm: warning: ", d.error + ": skipped (--on-error skip)");
            break;
        }
      }
      out.write_pending();
      if (progress.enabled())
        progress.update(in.bytes_done(), std::to_string(documents) + " documents, " + std::to_string(kept) +
                                             " kept, " + std::to_string(all.tokens) + " tokens, " +
                                             std::to_string(static_cast<int64_t>(all.tokens / seconds())) +
                                             " tokens/s");
    }
  }
  progress.finish();
  out.end();
  const double ppl = all.perplexity();
  std::fprintf(stderr,
               "lstmlm score: %lld documents, %lld kept, %lld filtered, %lld errors; %lld tokens, perplexity "
               "%s (of the scored documents); %.3f s (%.0f tokens/s)\n",
               static_cast<long long>(documents), static_cast<long long>(kept),
               static_cast<long long>(filtered), static_cast<long long>(errors),
               static_cast<long long>(all.tokens), std::isfinite(ppl) ? fixed(ppl, 4).c_str() : "-",
               seconds(), static_cast<double>(all.tokens) / seconds());
  return 0;
}

}  // namespace lstmlm::cli
