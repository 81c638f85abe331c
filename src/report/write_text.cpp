// text: the human layout of each record kind (docs/scoring.md, docs/generation.md). Tokens and contexts
// are written through escape_text, so a token cannot end a line or add a field; generated text is the
// text itself, written as it is.
#include <cstdio>
#include <stdexcept>

#include "lstmlm/report/record.hpp"

namespace lstmlm::report {

namespace {

class TextWriter final : public Writer {
 public:
  void record(const Record& r, std::string& out) override {
    if (r.kind == "score.line") return score_line(r, out);
    if (r.kind == "score.summary") return score_summary(r, out);
    if (r.kind == "predict") return predict(r, out);
    if (r.kind == "generate.sample") return generate_sample(r, out);
    // One hypothesis a line, best first: a line break inside one is written as the escape "\n".
    if (r.kind == "generate.hypothesis") {
      out += escape_text(r.at("display").s) + "\n";
      return;
    }
    if (r.kind == "rescore.hyp") return rescore_hyp(r, out);
    if (r.kind == "fidelity") return fidelity(r, out);
    if (r.kind == "rescore.summary") return;  // its figures go to stderr with the speed
    if (r.kind == "mix.iteration" || r.kind == "mix.model" || r.kind == "mix.result") return mix(r, out);
    throw std::logic_error("the text format has no layout for " + r.kind + " records");
  }

 private:
  // The log-prob fields a score record carries, in this order: both historic ones by default, one with
  // --units (a word's "prob" with --units prob).
  static constexpr const char* kLogprobFields[] = {"logprob", "log10prob", "surprisal", "prob"};

  static std::string number_or_dash(const Value& v) {
    if (v.kind == Value::Kind::Null) return "-";
    if (v.kind == Value::Kind::Int) return std::to_string(v.i);
    return fixed(v.d, 6);
  }

  static void score_line(const Record& r, std::string& out) {
    if (r.at("skipped").b) {
      out += "Skipped\n";
      return;
    }
    if (const Value* words = r.find("words"))
      for (const auto& w : words->list) {
        const Record word{"", w.fields};
        const Value* lp = nullptr;
        for (const char* name : kLogprobFields)
          if (!lp) lp = word.find(name);
        const bool oov = word.at("oov").b;
        out += escape_text(word.at("token").s);
        if (const Value* id = word.find("id")) out += "=" + std::to_string(id->i);
        out += std::string(oov ? "*" : "") + " ";
        // Not scored: the context-only first token of a line without a start token, or a skipped OOV.
        if (!lp || lp->kind == Value::Kind::Null)
          out += oov ? "skipped" : "context";
        else if (word.find("prob"))
          out += general(lp->d);
        else
          out += number_or_dash(*lp);
        if (const Value* e = word.find("entropy")) out += " entropy=" + number_or_dash(*e);
        if (const Value* k = word.find("rank")) out += " rank=" + number_or_dash(*k);
        out += "\t";
      }
    out += "Total:";
    for (const char* name : kLogprobFields)
      if (const Value* v = r.find(name)) out += std::string(" ") + name + "=" + fixed(v->d, 6);
    out += " tokens=" + std::to_string(r.at("tokens").i) + " oovs=" + std::to_string(r.at("oovs").i);
    if (r.find("softmax")) out += " softmax=skip";
    out += "\n";
  }

  static void score_summary(const Record& r, std::string& out) {
    out += "Sentences:\t" + std::to_string(r.at("sentences").i) + "\nTokens:\t" +
           std::to_string(r.at("tokens").i) + "\nOOVs:\t" + std::to_string(r.at("oovs").i) +
           "\nPerplexity including OOVs:\t" + fixed(r.at("perplexity").d, 4) +
           "\nPerplexity excluding OOVs:\t" + fixed(r.at("perplexity_excl_oov").d, 4) + "\n";
    if (r.find("softmax")) out += "Softmax:\tskip (the scores are unnormalised logits)\n";
  }

  static void predict(const Record& r, std::string& out) {
    out += "> " + escape_text(r.at("context").s) + "\n";
    if (r.find("softmax")) out += "# softmax skip: unnormalised logits, no probabilities\n";
    char buf[700];
    const auto& top = r.at("top").list;
    for (size_t i = 0; i < top.size(); ++i) {
      const Record c{"", top[i].fields};
      if (const Value* z = c.find("logit"))
        std::snprintf(buf, sizeof buf, "\tlogit=%.4f\n", z->d);
      else
        std::snprintf(buf, sizeof buf, "\tprob=%.6f\tlogprob=%.4f\n", c.at("prob").d, c.at("logprob").d);
      out += std::to_string(i + 1) + "\t" + escape_text(c.at("token").s) +
             "\tid=" + std::to_string(c.at("id").i) + buf;
    }
  }

  static std::string general(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
  }

  // One "Name:<TAB>value" line per figure (docs/precision.md); percentages with 4 decimals.
  static void fidelity(const Record& r, std::string& out) {
    const std::string low = r.at("precision").s;
    const int64_t tokens = r.at("tokens").i;
    const double pct = 100.0 * r.at("top1_agreement").d, dppl = 100.0 * r.at("delta_ppl_rel").d;
    out += "Tokens compared:\t" + std::to_string(tokens) + "\nMean KL(fp32||" + low + "):\t" +
           general(r.at("mean_kl").d) + "\nMax KL:\t" + general(r.at("max_kl").d) +
           "\nMax |delta ln p(target)|:\t" + general(r.at("max_abs_dlogp").d) + "\nTop-1 agreement:\t" +
           fixed(pct, 4) + "% (" + std::to_string(r.at("top1_agree").i) + " of " + std::to_string(tokens) +
           ")\nPerplexity fp32:\t" + fixed(r.at("perplexity_ref").d, 4) + "\nPerplexity " + low + ":\t" +
           fixed(r.at("perplexity_low").d, 4) + "\nRelative delta PPL:\t" + (dppl >= 0 ? "+" : "") +
           fixed(dppl, 4) + "%\nKernels fp32:\t" + r.at("kernels_ref").s + "\nKernels " + low + ":\t" +
           r.at("kernels_low").s + "\n";
  }

  // mix-tune: "iteration N\tweights W1 W2 ...\tperplexity P", "model M\tperplexity P", then the result.
  static void mix(const Record& r, std::string& out) {
    auto weights = [&] {
      std::string w;
      for (const auto& v : r.at("weights").list) w += (w.empty() ? "" : " ") + general(v.d);
      return w;
    };
    if (r.kind == "mix.iteration")
      out += "iteration " + std::to_string(r.at("iteration").i) + "\tweights " + weights() + "\tperplexity " +
             fixed(r.at("perplexity").d, 4) + "\n";
    else if (r.kind == "mix.model")
      out +=
          "alone\t" + escape_text(r.at("model").s) + "\tperplexity " + fixed(r.at("perplexity").d, 4) + "\n";
    else
      out += "weights\t" + weights() + "\nperplexity\t" + fixed(r.at("perplexity").d, 4) + "\n";
  }

  static void rescore_hyp(const Record& r, std::string& out) {
    out += escape_text(r.at("id").s) + "\tcombined=" + fixed(r.at("combined").d, 6) +
           "\tlm=" + fixed(r.at("lm_logprob").d, 6) + "\tlm_log10=" + fixed(r.at("lm_log10prob").d, 6) +
           (r.find("lm_backward") ? "\tlm_backward=" + fixed(r.at("lm_backward").d, 6) +
                                        "\tlm_bidirectional=" + fixed(r.at("lm_bidirectional").d, 6)
                                  : std::string()) +
           "\ttokens=" + std::to_string(r.at("tokens").i) + "\toovs=" + std::to_string(r.at("oovs").i) +
           "\twords=" + std::to_string(r.at("words").i) + (r.at("best").b ? "\tbest\n" : "\n");
  }

  // Several samples: each after a header line; `display` is the prompt joined with the generated text.
  static void generate_sample(const Record& r, std::string& out) {
    out += "=== sample " + std::to_string(r.at("sample").i) + " ===\n" + r.at("display").s + "\n";
  }
};

}  // namespace

std::unique_ptr<Writer> make_text_writer() { return std::make_unique<TextWriter>(); }

}  // namespace lstmlm::report
