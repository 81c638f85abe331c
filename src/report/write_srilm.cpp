// srilm: the layout of SRILM's `ngram -ppl FILE -debug 0|1|2` (LM::pplFile, LM::sentenceProb, TextStats
// operator<<), so tools that read it (ppl-from-log, add-ppls, ...) read lstmlm's. Per sentence (-v
// sentence and word) the sentence, at -v word its "\tp( W | C ...) \t= [Ngram] P [ LOG10 ]" lines, then
//   S sentences, N words, K OOVs
//   0 zeroprobs, logprob= L ppl= P ppl1= P1
// and a blank line; per input file "file F: " and the same two lines. Numbers as SRILM's streams print
// them: 7 significant digits (%.7g). SRILM's counting: words exclude </s>, OOVs are words without a
// probability (excluded from logprob), ppl = 10^(-L / (N - K + S)), ppl1 = 10^(-L / (N - K)).
// How lstmlm's tokens map onto these (OOVs, unscored tokens) is in docs/scoring.md.
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "lstmlm/report/record.hpp"

namespace lstmlm::report {

namespace {

std::string g7(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return buf;
}

struct Stats {
  int64_t sentences = 0, words = 0, oovs = 0;
  double logprob = 0;  // log10, OOVs excluded

  void add(const Stats& s) {
    sentences += s.sentences;
    words += s.words;
    oovs += s.oovs;
    logprob += s.logprob;
  }
  // TextStats' operator<<: the second line only when anything was counted.
  void print(std::string& out) const {
    out += std::to_string(sentences) + " sentences, " + std::to_string(words) + " words, " +
           std::to_string(oovs) + " OOVs\n";
    if (words + sentences == 0) return;
    out += "0 zeroprobs, logprob= " + g7(logprob);
    auto ppl = [&](int64_t denom) { return denom > 0 ? g7(std::pow(10.0, -logprob / denom)) : "undefined"; };
    out += " ppl= " + ppl(words - oovs + sentences) + " ppl1= " + ppl(words - oovs) + "\n";
  }
};

class SrilmWriter final : public Writer {
 public:
  void record(const Record& r, std::string& out) override {
    if (r.kind == "score.line") return line(r, out);
    if (r.kind == "score.summary") {
      if (!seen_) file_ = r.at("file").s;
      return end_file(out);
    }
    throw std::logic_error("the srilm format has no layout for " + r.kind + " records");
  }

 private:
  void end_file(std::string& out) {
    out += "file " + file_ + ": ";
    file_stats_.print(out);
    file_stats_ = {};
  }

  void line(const Record& r, std::string& out) {
    const std::string& file = r.at("file").s;
    if (seen_ && file != file_) end_file(out);
    seen_ = true;
    file_ = file;
    if (r.at("reset").b) previous_ = "<s>";
    if (r.at("skipped").b) return;  // not a sentence: SRILM has no such line
    const std::string& detail = r.at("detail").s;
    Stats s;
    std::string sentence, probs;
    for (const auto& w : r.at("words").list) {
      const Record word{"", w.fields};
      const bool eos = word.at("eos").b, oov = word.at("oov").b;
      const int64_t ngram = word.at("ngram").i, context = word.at("context").i;
      const std::string surface = eos ? "</s>" : escape_text(word.at("token").s);
      if (!eos) sentence += (sentence.empty() ? "" : " ") + surface;
      // A context-only token (no start token) plays <s>'s part: context, neither word nor line.
      const bool context_only = ngram == 0 && !oov;
      if (!context_only) {
        if (eos)
          ++s.sentences;
        else
          ++s.words;
        const double lp = oov ? -INFINITY : word.at("log10prob").d;
        if (oov)
          ++s.oovs;
        else
          s.logprob += lp;
        probs += "\tp( " + surface + " | " + (context > 0 ? previous_ : std::string()) +
                 (context > 1 ? " ..." : " ") +
                 ") \t= " + (oov ? std::string("[OOV]") : "[" + std::to_string(ngram) + "gram]") + " " +
                 (oov ? std::string("0") : g7(std::pow(10.0, lp))) + " [ " + g7(static_cast<float>(lp)) +
                 " ]\n";
      }
      if (word.at("id").i >= 0) previous_ = surface;  // fed: the next token's context
    }
    file_stats_.add(s);
    if (detail == "summary") return;
    out += sentence + "\n";
    if (detail == "word") out += probs;
    s.print(out);
    out += "\n";
  }

  bool seen_ = false;
  std::string file_, previous_ = "<s>";
  Stats file_stats_;
};

}  // namespace

std::unique_ptr<Writer> make_srilm_writer() { return std::make_unique<SrilmWriter>(); }

}  // namespace lstmlm::report
