#include "score_jsonl.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "emit.hpp"
#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/report/jsonl.hpp"
#include "lstmlm/tasks/jsonl.hpp"
#include "lstmlm/tasks/request.hpp"
#include "lstmlm/tasks/resume.hpp"
#include "output.hpp"
#include "progress.hpp"

namespace lstmlm::cli {

namespace {

// Documents per block: enough lines for full batches in sentence mode, a bounded memory per block; also
// what --resume keeps per file in its directory.
constexpr size_t kBlockLines = 1024;

// What a block adds to the run's counts; kept in a --resume marker, so a resumed block counts as scored.
struct BlockCounts {
  int64_t documents = 0, kept = 0, filtered = 0, errors = 0;
  tasks::ScoreSummary scored;         // the scored documents (kept or filtered)
  std::vector<std::string> warnings;  // --on-error skip: the skipped documents' messages

  void add(const BlockCounts& b) {
    documents += b.documents;
    kept += b.kept;
    filtered += b.filtered;
    errors += b.errors;
    scored.add(b.scored);
  }
};

// A double that survives the marker exactly, infinities and NaN included (C's hexadecimal float).
std::string exact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

double exact(const nlohmann::json& j) { return std::strtod(j.get<std::string>().c_str(), nullptr); }

nlohmann::json record(const BlockCounts& b) {
  const auto& s = b.scored;
  return {{"documents", b.documents},    {"kept", b.kept},
          {"filtered", b.filtered},      {"errors", b.errors},
          {"sentences", s.sentences},    {"skipped", s.skipped},
          {"tokens", s.tokens},          {"oovs", s.oovs},
          {"oov_tokens", s.oov_tokens},  {"nonfinite", s.nonfinite},
          {"logprob", exact(s.logprob)}, {"oov_logprob", exact(s.oov_logprob)},
          {"warnings", b.warnings}};
}

BlockCounts counts(const nlohmann::json& j, const std::string& where) {
  try {
    BlockCounts b;
    b.documents = j.at("documents").get<int64_t>();
    b.kept = j.at("kept").get<int64_t>();
    b.filtered = j.at("filtered").get<int64_t>();
    b.errors = j.at("errors").get<int64_t>();
    auto& s = b.scored;
    s.sentences = j.at("sentences").get<int64_t>();
    s.skipped = j.at("skipped").get<int64_t>();
    s.tokens = j.at("tokens").get<int64_t>();
    s.oovs = j.at("oovs").get<int64_t>();
    s.oov_tokens = j.at("oov_tokens").get<int64_t>();
    s.nonfinite = j.at("nonfinite").get<int64_t>();
    s.logprob = exact(j.at("logprob"));
    s.oov_logprob = exact(j.at("oov_logprob"));
    b.warnings = j.at("warnings").get<std::vector<std::string>>();
    return b;
  } catch (const nlohmann::json::exception&) {
    throw InputError(where + ": not a block marker of lstmlm score: remove it to redo its block");
  }
}

// What the output of a --resume directory depends on: a relaunch with anything else is refused.
nlohmann::json manifest(const JsonlRun& r, const tasks::ScoreOptions& score) {
  namespace fs = std::filesystem;
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& p : r.files) {
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    const auto time = fs::last_write_time(p, ec);
    inputs.push_back({{"path", fs::absolute(p).lexically_normal().string()},
                      {"size", ec ? 0 : size},
                      {"mtime", ec ? 0 : time.time_since_epoch().count()}});
  }
  return {{"command", "lstmlm score --input-format jsonl"},
          {"format", 1},
          {"model", fs::absolute(r.model_dir).lexically_normal().string()},
          {"precision", std::string(precision_name(r.precision))},
          {"inputs", inputs},
          {"shard", r.shard ? std::to_string(r.shard->index) + "/" + std::to_string(r.shard->count) : "1/1"},
          {"block_lines", kBlockLines},
          {"text_field", r.text_field},
          {"min_perplexity", r.min_perplexity ? exact(*r.min_perplexity) : ""},
          {"max_perplexity", r.max_perplexity ? exact(*r.max_perplexity) : ""},
          {"on_error", r.skip_errors ? "skip" : "fail"},
          {"context", tasks::context_choices().name(score.context)},
          {"eos", score.append_eos},
          {"bos", score.add_start},
          {"oov", tasks::oov_choices().name(score.oov)},
          {"skip_empty", score.skip_empty},
          {"ids", score.ids_input},
          {"normalize", tasks::normalize_choices().name(score.normalize)},
          {"window", {static_cast<int>(score.window.mode), score.window.length}}};
}

std::string block_id(size_t file, uint64_t block) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%05zu-%09llu", file, static_cast<unsigned long long>(block));
  return buf;
}

}  // namespace

int run_score_jsonl(const JsonlRun& r) {
  check_readable(r.files);
  std::unique_ptr<LineReader> reader;
  uint64_t shard_bytes = 0;
  if (r.shard) {
    auto ranges = tasks::shard_ranges(r.files, *r.shard);
    for (const auto& fr : ranges) shard_bytes += fr.end - fr.begin;
    reader = std::make_unique<LineReader>(std::move(ranges));
  } else {
    reader = std::make_unique<LineReader>(r.files);
  }
  tasks::JsonlOptions opt;
  opt.text_field = r.text_field;
  opt.score = r.score;
  opt.min_perplexity = r.min_perplexity;
  opt.max_perplexity = r.max_perplexity;
  auto model = load_model(r.model_dir);
  note_oov_policy(r.score.oov, *model);
  opt.score.window = resolve_window(r.window, *model);
  Engine engine(model, engine_options(r.threads, r.precision, r.fold));
  tasks::JsonlScorer scorer(engine, opt);
  std::optional<tasks::ResumeDir> resume;
  if (!r.resume_dir.empty()) resume.emplace(r.resume_dir, manifest(r, opt.score));
  Emitter out(Format::Jsonl);
  Progress progress("score", r.progress, r.files);
  if (r.shard) progress.set_total(shard_bytes);
  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  LineReader& in = *reader;
  std::vector<std::string> lines;
  uint64_t first = 0;
  BlockCounts all;
  int64_t resumed = 0, resumed_tokens = 0;  // resumed tokens are not counted in this run's speed
  // A line number in a message: within a shard's range the reader counts from the range's start; the
  // lines before it are counted only when a message needs them.
  std::optional<uint64_t> base;
  auto place = [&](std::string message) {
    if (in.range_begin() == 0) return message;
    if (!base) base = tasks::lines_before(in.source(), in.range_begin());
    const std::string prefix = in.source() + ":";
    size_t digits = prefix.size();
    while (digits < message.size() && std::isdigit(static_cast<unsigned char>(message[digits]))) ++digits;
    if (message.compare(0, prefix.size(), prefix) != 0 || digits == prefix.size()) return message;
    const uint64_t line = std::stoull(message.substr(prefix.size(), digits - prefix.size()));
    return prefix + std::to_string(*base + line) + message.substr(digits);
  };
  while (in.next_file()) {
    base.reset();
    uint64_t block_no = 0;
    while (in.next_block(lines, kBlockLines, first)) {
      const std::string id = block_id(in.file_index(), block_no++);
      if (resume) {
        if (auto done = resume->finished(id)) {
          const BlockCounts b = counts(done->record, resume->dir() + "/" + id + ".done");
          for (const auto& w : b.warnings) print_diagnostic("lstmlm: warning: ", w);
          out.raw(done->output);
          out.write_pending();
          all.add(b);
          ++resumed;
          resumed_tokens += b.scored.tokens;
          continue;
        }
      }
      const auto docs = scorer.score(lines, in.source(), first);
      BlockCounts b;
      std::string text;
      for (size_t i = 0; i < docs.size(); ++i) {
        const auto& d = docs[i];
        ++b.documents;
        switch (d.status) {
          case tasks::JsonlDocument::Status::Kept:
            ++b.kept;
            text += report::jsonl_document(lines[i], d);
            text += '\n';
            b.scored.add(d.total);
            break;
          case tasks::JsonlDocument::Status::Filtered:
            ++b.filtered;
            b.scored.add(d.total);
            break;
          case tasks::JsonlDocument::Status::Error:
            ++b.errors;
            if (!r.skip_errors) {
              out.raw(text);
              out.write_pending();  // every document before the bad one, then the error
              throw InputError(place(d.error) + " (--on-error skip skips such documents)");
            }
            b.warnings.push_back(place(d.error) + ": skipped (--on-error skip)");
            print_diagnostic("lstmlm: warning: ", b.warnings.back());
            break;
        }
      }
      if (resume) resume->commit(id, text, record(b));
      out.raw(text);
      out.write_pending();
      all.add(b);
      if (progress.enabled())
        progress.update(
            in.bytes_done(),
            std::to_string(all.documents) + " documents, " + std::to_string(all.kept) + " kept, " +
                std::to_string(all.scored.tokens) + " tokens, " +
                std::to_string(static_cast<int64_t>((all.scored.tokens - resumed_tokens) / seconds())) +
                " tokens/s");
    }
  }
  progress.finish();
  out.end();
  if (resumed > 0)
    std::fprintf(stderr, "lstmlm score: %lld blocks of %zu lines not scored again: finished before in %s\n",
                 static_cast<long long>(resumed), kBlockLines, resume->dir().c_str());
  const double ppl = all.scored.perplexity();
  std::fprintf(stderr,
               "lstmlm score: %lld documents, %lld kept, %lld filtered, %lld errors; %lld tokens, perplexity "
               "%s (of the scored documents); %.3f s (%.0f tokens/s)\n",
               static_cast<long long>(all.documents), static_cast<long long>(all.kept),
               static_cast<long long>(all.filtered), static_cast<long long>(all.errors),
               static_cast<long long>(all.scored.tokens), std::isfinite(ppl) ? fixed(ppl, 4).c_str() : "-",
               seconds(), static_cast<double>(all.scored.tokens - resumed_tokens) / seconds());
  return 0;
}

}  // namespace lstmlm::cli
