// `lstmlm info -m DIR [--json]`: Keras-style summary of a model, its memory, tokenizer and provenance.
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/report/info.hpp"
#include "lstmlm/summary.hpp"
#include "lstmlm/tasks/window.hpp"
#include "options.hpp"
#include "output.hpp"

namespace lstmlm::cli {

namespace info_cmd {

// What each precision would run here, "fp32/avx512, bf16/amx, int8/amx": every precision has a kernel
// on every x86-64 (bf16 and int8 down to scalar), so this only fails for a bad LSTMLM_ISA, which is then
// the error.
std::string kernels_line() {
  std::string s;
  for (Precision p : kPrecisions) s += (s.empty() ? "" : ", ") + kernels_for(p);
  return s + " (fp32 the default; --precision)";
}

struct InfoOptions {
  std::string model;
  bool json = false;
};

// 191754 -> "191,754" (Keras prints parameter counts grouped).
std::string grouped(int64_t n) {
  std::string d = std::to_string(n < 0 ? -n : n), r;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) r += ',';
    r += d[i];
  }
  return n < 0 ? "-" + r : r;
}

std::string pad(std::string s, size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

std::string shape(int64_t width) { return "(None, T, " + std::to_string(width) + ")"; }

std::string token_or_none(const std::optional<std::string>& t) {
  return t ? nlohmann::json(*t).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : "none";
}

std::string human_bytes(size_t b) {
  std::ostringstream o;
  o.precision(3);
  if (b >= (1u << 20))
    o << static_cast<double>(b) / (1 << 20) << " MiB";
  else
    o << static_cast<double>(b) / 1024 << " KiB";
  return o.str();
}

void print_text(const Model& m, const ModelSummary& s, Output& out) {
  const auto& c = m.config();
  const std::string kernels = kernels_line();  // before any output: a bad LSTMLM_ISA prints nothing else
  out.line("Model: " + m.directory() + " (lstmlm format v" + std::to_string(c.format_version) + ")");
  if (c.embedding_dim == 0) out.line("Input: one-hot vectors of " + std::to_string(c.vocab_size));
  const std::string rule(78, '=');
  out.line(pad("Layer (type)", 28) + pad("Output Shape", 20) + pad("Param #", 14) + "Notes");
  out.line(rule);
  for (const auto& l : s.layers) {
    std::string note = l.note;
    if (l.trainable && !*l.trainable) note = note.empty() ? "frozen" : note + ", frozen";
    std::string row =
        pad(l.name + " (" + l.type + ")", 28) + pad(shape(l.width), 20) + pad(grouped(l.params), 14) + note;
    while (!row.empty() && row.back() == ' ') row.pop_back();
    out.line(row);
  }
  out.line(rule);
  out.line("Total params: " + grouped(s.total_params));
  if (s.trainable_params) {
    out.line("Trainable params: " + grouped(*s.trainable_params));
    out.line("Non-trainable params: " + grouped(*s.non_trainable_params));
  } else {
    out.line("Trainable params: not recorded by the source");
  }
  const size_t bytes = m.memory_bytes() + packed_bytes(m);
  if (c.exact_path())
    out.line(
        "Kernels: fp64/exact (the double-precision path: class-factored output, direct connections, exp " +
        std::string(to_string(c.exp)) + "; --precision does not apply)");
  else
    out.line("Kernels: " + kernels);
  out.line("Memory: " + grouped(static_cast<int64_t>(bytes)) + " bytes (" + human_bytes(bytes) +
           ", weights and kernel tables)");
  const auto& t = c.tokenizer;
  std::string tok = std::string(to_string(t.type)) + ", vocab " + grouped(c.vocab_size) +
                    (t.lowercase ? ", lowercase" : "") + ", filters " +
                    nlohmann::json(t.filters).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                    ", unk " + token_or_none(t.unk_token) + ", eos " + token_or_none(t.eos_token) + ", bos " +
                    token_or_none(t.bos_token) + ", pad_id " +
                    (t.pad_id ? std::to_string(*t.pad_id) : "none");
  out.line("Tokenizer: " + tok);
  if (c.input_length)
    out.line("Input length: " + std::to_string(*c.input_length) +
             " (score, predict and generate pre-pad every context to it by default, as Keras does; "
             "--stateful or --window N overrides)");
  const int32_t pad = tasks::window_pad_id(m);
  out.line(std::string("Padding (--pad-to): ") +
           (pad == c.vocab_size
                ? "zero vectors (one-hot input without pad_id, as Keras pads a one-hot array)"
                : "id " + std::to_string(pad) + (t.pad_id ? " (pad_id)" : " (no pad_id: Keras' 0)")));
  out.line("Source: " + c.source.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  for (const auto& w : m.warnings()) out.line("Warning: " + w);
}

}  // namespace info_cmd

Subcommand setup_info(CLI::App& parent) {
  using namespace info_cmd;
  auto opts = std::make_shared<InfoOptions>();
  Subcommand s;
  s.app =
      parent.add_subcommand("info", "Describe a model: layers, parameters, memory, tokenizer, provenance");
  add_model_option(*s.app, opts->model);
  s.app->add_flag("--json", opts->json, "Print one JSON object instead of the table");
  s.run = [opts]() -> int {
    if (NgramModel::is_arpa(opts->model)) {
      const auto ngram = load_ngram(opts->model);
      Output out;
      if (opts->json) {
        out.line(report::ngram_info_json(*ngram));
      } else {
        std::string counts;
        uint64_t all = 0;
        for (size_t n = 0; n < ngram->counts().size(); ++n) {
          counts += (n ? " " : "") + std::to_string(n + 1) + "=" + std::to_string(ngram->counts()[n]);
          all += ngram->counts()[n];
        }
        out.line("Model: " + ngram->path() + " (ARPA n-gram model, order " + std::to_string(ngram->order()) +
                 ")");
        out.line("N-grams: " + counts + " (" + std::to_string(all) + " in all)");
        out.line("Vocabulary: " + std::to_string(ngram->vocab_size()) + " words" +
                 (ngram->unk_added() ? " (<unk> added at log10 p -100)" : ""));
        out.line("Memory: " + std::to_string(ngram->memory_bytes() / 1024) + " KiB");
      }
      out.flush();
      return 0;
    }
    auto model = load_model(opts->model);
    Output out;
    if (opts->json)
      out.line(report::model_info_json(*model));
    else
      print_text(*model, summarize(*model), out);
    out.flush();
    return 0;
  };
  return s;
}

}  // namespace lstmlm::cli
