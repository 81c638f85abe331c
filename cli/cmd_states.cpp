// `lstmlm states`: the recurrent state after each token of a text, per layer, as .npy files beside a jsonl of
// the tokens (lstmlm/tasks/states.hpp); for probing a model's hidden units.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "commands.hpp"
#include "emit.hpp"
#include "limits.hpp"
#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/report/npy.hpp"
#include "lstmlm/tasks/states.hpp"
#include "options.hpp"
#include "progress.hpp"

namespace lstmlm::cli {

namespace states_cmd {

constexpr const char* kHelp =
    R"(Feeds the text (FILE..., stdin when none or '-') to the model as `lstmlm score` does (the same tokens,
start token, line end, OOV rules, --context sentence or document) and writes, into --output-dir DIR:
  tokens.jsonl   one record per fed token, in order: {"line": N, "position": T, "id": I, "token": "..."}
                 (position 0 is the line's first fed token: the start token where the line starts from it)
  h_l{K}.npy     layer K's output h after each token: float32 [tokens, width] (numpy's format, C order)
  c_l{K}.npy     layer K's cell state c after each token (LSTM layers only): float32 [tokens, hidden]
Row t of every array belongs to record t of tokens.jsonl. The values are the bits scoring computes (the
same kernels, --threads and --batch-size do not change them). Existing files of these names in DIR are
replaced; DIR is created if needed. Skipped lines (--skip-empty) have no rows.)";

struct Opts {
  std::string model_dir, out_dir;
  std::vector<std::string> files, file_opts;
  std::string context = "sentence", normalize = "none";
  tasks::OovPolicy oov = tasks::OovPolicy::Skip;
  bool no_eos = false, skip_empty = false, ids = false;
  int batch_size = 64, threads = 0;
  std::string progress = "auto";
};

// A .npy file written a block at a time: a header with the final row count is rewritten at the end.
class NpyFile {
 public:
  NpyFile(const std::filesystem::path& path, size_t cols) : path_(path), cols_(cols) {
    f_.open(path, std::ios::binary | std::ios::trunc);
    if (!f_) throw InputError(path.string() + ": cannot write");
    f_ << report::npy_header(0, cols);
  }
  void append(const MatrixRM& rows) {
    f_.write(reinterpret_cast<const char*>(rows.data()), std::streamsize(rows.size() * sizeof(float)));
    rows_ += size_t(rows.rows());
  }
  void finish() {
    f_.seekp(0);
    f_ << report::npy_header(rows_, cols_);
    f_.close();
    if (!f_) throw InputError(path_.string() + ": write failed");
  }

 private:
  std::filesystem::path path_;
  size_t cols_;
  size_t rows_ = 0;
  std::ofstream f_;
};

int run(const Opts& o) {
  check_readable(o.files);
  tasks::ScoreOptions task = line_options(o);
  auto model = load_model(o.model_dir);
  note_oov_policy(o.oov, *model);
  Engine engine(model, engine_options(o.threads, Precision::Fp32));
  tasks::StateReader reader(engine, task);
  const std::filesystem::path dir(o.out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(o.out_dir + ": cannot create the output directory: " + ec.message());
  const State like = State::zeros(*model);
  std::vector<NpyFile> h;
  std::vector<std::optional<NpyFile>> c(like.h.size());  // none for a layer without a cell state
  for (size_t k = 0; k < like.h.size(); ++k) {
    h.emplace_back(dir / ("h_l" + std::to_string(k) + ".npy"), like.h[k].size());
    if (k < like.c.size() && !like.c[k].empty())
      c[k].emplace(dir / ("c_l" + std::to_string(k) + ".npy"), like.c[k].size());
  }
  std::ofstream tokens(dir / "tokens.jsonl", std::ios::trunc);
  if (!tokens) throw InputError((dir / "tokens.jsonl").string() + ": cannot write");
  LineReader in(o.files);
  Progress progress("states", o.progress, o.files);
  std::vector<std::string> lines;
  std::vector<tasks::LineEnd> ends;
  uint64_t first = 0;
  int64_t total = 0;
  while (in.next_file()) {
    while (in.next_block(lines, 1024, first, &ends)) {
      for (const tasks::LineStates& s : reader.read(lines, in.source(), first, ends)) {
        for (size_t t = 0; t < s.ids.size(); ++t)
          tokens << "{\"line\": " << s.line << ", \"position\": " << t << ", \"id\": " << s.ids[t]
                 << ", \"token\": " << json_string(s.tokens[t]) << "}\n";
        for (size_t k = 0; k < s.h.size(); ++k) {
          h[k].append(s.h[k]);
          if (c[k]) c[k]->append(s.c[k]);
        }
        total += int64_t(s.ids.size());
      }
      check_interrupted();
      progress.update(in.bytes_done(), std::to_string(total) + " tokens");
    }
  }
  progress.finish();
  for (auto& f : h) f.finish();
  for (auto& f : c)
    if (f) f->finish();
  tokens.close();
  if (!tokens) throw InputError((dir / "tokens.jsonl").string() + ": write failed");
  std::fprintf(stderr, "lstmlm states: %lld tokens, %zu layers, into %s\n", static_cast<long long>(total),
               h.size(), o.out_dir.c_str());
  return 0;
}

}  // namespace states_cmd

Subcommand setup_states(CLI::App& parent) {
  using namespace states_cmd;
  auto o = std::make_shared<Opts>();
  Subcommand s;
  s.app = parent.add_subcommand("states", "Hidden states after each token, per layer, as .npy files");
  s.app->footer(kHelp);
  add_model_option(*s.app, o->model_dir);
  s.app->add_option("files", o->files, "Input files ('-' or none: stdin)");
  add_file_option(*s.app, o->file_opts, "An input file, as FILE (repeatable; read before the FILEs)");
  s.app->add_option("-o,--output-dir", o->out_dir, "Where tokens.jsonl, h_l*.npy and c_l*.npy go")
      ->required();
  s.app->add_option("--context", o->context, "sentence (state reset per line) or document, as score")
      ->check(one_of(tasks::context_choices().names()))
      ->capture_default_str();
  s.app->add_flag("--no-eos", o->no_eos, "Do not append a line end, as score --no-eos");
  add_oov_option(*s.app, o->oov);
  s.app->add_flag("--skip-empty", o->skip_empty, "Do not feed empty lines");
  s.app->add_flag("--ids", o->ids, "Lines are whitespace-separated token ids");
  add_normalize_option(*s.app, o->normalize);
  s.app->add_option("--batch-size", o->batch_size, "Lines per engine batch")
      ->check(int_range(1, kMaxBatch))
      ->capture_default_str();
  add_threads_option(*s.app, o->threads);
  add_progress_option(*s.app, o->progress);
  s.check = [o] { o->files.insert(o->files.begin(), o->file_opts.begin(), o->file_opts.end()); };
  s.run = [o]() -> int { return run(*o); };
  return s;
}

}  // namespace lstmlm::cli
