#include "rescore_lattices.hpp"

#include <chrono>
#include <cstdio>
#include <optional>

#include "line_reader.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/report/rescore.hpp"
#include "lstmlm/tasks/lattice.hpp"
#include "options.hpp"

namespace lstmlm::cli {

namespace rescore_lattices_cmd {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace rescore_lattices_cmd

bool lattice_input(const std::vector<std::string>& files) {
  if (files.empty() || files[0] == "-") return false;
  return detect_lattice(files[0]).has_value();
}

int rescore_lattices(const LatticeCli& o) {
  std::vector<std::string> files = o.files;
  if (files.empty()) files.push_back("-");
  check_readable(files);
  std::shared_ptr<const SymbolTable> symbols;
  if (!o.words.empty()) symbols = SymbolTable::load(o.words);
  if (!symbols && o.output == LatticeFormat::Kaldi)
    throw UsageError("--output-format kaldi-lattice needs --words FILE (Kaldi lattices hold word ids)");
  // Each file's form, before the model is loaded: a usage error comes at once.
  std::vector<LatticeFormat> forms;
  for (const auto& file : files) {
    std::optional<LatticeFormat> f = o.input;
    if (!f && file != "-") f = detect_lattice(file);
    forms.push_back(f.value_or(LatticeFormat::Kaldi));
    if (forms.back() == LatticeFormat::Kaldi && !symbols)
      throw UsageError(file + ": a Kaldi lattice holds word ids: give its words.txt with --words FILE");
  }
  auto model = load_model(o.model_dir);
  note_oov_policy(o.oov, *model);
  Engine engine(model, o.threads);

  tasks::LatticeRescoreOptions task;
  task.score.append_eos = !o.no_eos;
  task.score.oov = o.oov;
  task.score.batch_size = o.batch_size;
  task.lm_weight = o.lm_weight;
  task.word_penalty = o.word_penalty;
  task.max_ngram_order = o.max_ngram_order;
  if (o.beam > 0) task.beam = o.beam;
  task.max_tokens_per_node = o.max_tokens_per_node;
  task.n_best = o.best ? 1 : o.n_best;
  task.lattice_out = o.output.has_value();

  Emitter out(o.output ? Format::Text : o.format);
  const bool records = !o.output && !(o.best && o.format == Format::Text);
  report::RescoreLayout lay;
  bool begun = false;
  int64_t lattices = 0, paths = 0, tokens = 0, oovs = 0;
  tasks::LatticeStats total;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const std::string& file = files[fi];
    LatticeReader in(file, {forms[fi], symbols});
    Lattice l;
    if (!in.next(l)) continue;
    const auto& names = l.score_names;
    if (!begun) {
      lay.names = names;
      task.weights.assign(names.size(), 0.0);
      for (const auto& [name, w] : o.weights) {
        size_t k = 0;
        while (k < names.size() && names[k] != name) ++k;
        if (k == names.size()) {
          std::string known;
          for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
          throw UsageError("--weight: no score named '" + name + "' in " + file +
                           "'s lattices (their scores: " + known + ")");
        }
        task.weights[k] = w;
      }
      if (records) {
        std::vector<std::string> columns = {"file", "utt",   "id",         "n",           "tokens",
                                            "oovs", "words", "lm_logprob", "lm_log10prob"};
        columns.insert(columns.end(), names.begin(), names.end());
        for (const char* c : {"combined", "best", "hyp"}) columns.push_back(c);
        out.begin({"rescore.hyp", columns});
      }
      begun = true;
    }
    tasks::LatticeRescorer rescorer(&engine, task);
    do {
      if (l.score_names != lay.names)
        throw InputError(l.source, l.line,
                         "lattice '" + l.key + "': its scores are not those of the lattices before it (" +
                             rescore_lattices_cmd::joined(l.score_names) + " after " +
                             rescore_lattices_cmd::joined(lay.names) + ")");
      auto r = rescorer.rescore(l);
      ++lattices;
      for (const auto& p : r.nbest) {
        ++paths;
        tokens += p.score.lm.tokens;
        oovs += p.score.lm.oovs;
        if (o.output) continue;
        if (!records)
          out.raw(escape_text(p.hyp.utt) + (p.hyp.text.empty() ? "" : " ") + escape_text(p.hyp.text) + "\n");
        else
          out.emit(report::hyp_record(o.format, lay, file, p.hyp, p.score));
      }
      if (o.output)
        out.raw(*o.output == LatticeFormat::Kaldi ? write_kaldi_lattice(r.rescored, *symbols)
                                                  : write_slf_lattice(r.rescored));
      out.write_pending();
      check_interrupted();
    } while (in.next(l));
    const auto& st = rescorer.stats();
    total.arcs += st.arcs;
    total.steps += st.steps;
    total.merged += st.merged;
    total.pruned += st.pruned;
    total.calls += st.calls;
  }
  if (records) {
    if (!begun)
      out.begin({"rescore.hyp",
                 {"file", "utt", "id", "n", "tokens", "oovs", "words", "lm_logprob", "lm_log10prob",
                  "combined", "best", "hyp"}});
    tasks::PrefixStats ps;
    ps.lines = paths;
    ps.steps = total.steps;
    ps.computed = total.steps;
    out.emit(report::rescore_summary_record(lattices, paths, tokens, oovs, ps));
  }
  out.end();
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(
      stderr,
      "lstmlm rescore: %lld lattice%s, %lld arcs in %.3f s (%.0f arcs/s); %lld LSTM steps (%.2f per arc) "
      "in %lld engine calls, %lld histories merged, %lld pruned\n",
      static_cast<long long>(lattices), lattices == 1 ? "" : "s", static_cast<long long>(total.arcs), sec,
      static_cast<double>(total.arcs) / sec, static_cast<long long>(total.steps),
      total.arcs ? static_cast<double>(total.steps) / static_cast<double>(total.arcs) : 0.0,
      static_cast<long long>(total.calls), static_cast<long long>(total.merged),
      static_cast<long long>(total.pruned));
  return 0;
}

}  // namespace lstmlm::cli
