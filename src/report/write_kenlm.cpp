// kenlm: the layout of KenLM's `query` (lm/ngram_query.hh, QueryPrinter), so scripts that parse it read
// lstmlm's unchanged: per word "WORD=ID LENGTH LOG10PROB\t", per line "Total: LOG10 OOV: N", then
// "Perplexity including OOVs:\t", "Perplexity excluding OOVs:\t", "OOVs:\t", "Tokens:\t". Numbers are
// written as KenLM writes them (double-conversion's shortest form, float for per-word and line values).
// The mapping of an LSTM onto these fields (ids, lengths, unscored tokens) is in docs/scoring.md.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "lstmlm/report/record.hpp"

namespace lstmlm::report {

namespace {

// double-conversion's ToShortest with KenLM's converter (NO_FLAGS, "inf", "NaN", 'e', -6, 21): the
// shortest digits that read back the same value, in decimal for exponents in [-6, 21), else d.ddde-N.
template <class T>
std::string shortest(T v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // [-]d[.ddd]e[+-]NN
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out += '-';
    i = 1;
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t k = i; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  const int exponent = std::atoi(sci.c_str() + e + 1);
  if (digits == "0") return out + "0";
  const int n = static_cast<int>(digits.size());
  if (exponent < -6 || exponent >= 21) {
    out += digits[0];
    if (n > 1) out += "." + digits.substr(1);
    return out + "e" + std::to_string(exponent);
  }
  const int point = exponent + 1;  // digits before the decimal point
  if (point <= 0) return out + "0." + std::string(static_cast<size_t>(-point), '0') + digits;
  if (point >= n) return out + digits + std::string(static_cast<size_t>(point - n), '0');
  return out + digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
}

class KenlmWriter final : public Writer {
 public:
  void record(const Record& r, std::string& out) override {
    if (r.kind == "score.line") return line(r, out);
    if (r.kind == "score.summary") return summary(r, out);
    throw std::logic_error("the kenlm format has no layout for " + r.kind + " records");
  }

 private:
  static void line(const Record& r, std::string& out) {
    // A skipped line (--skip-empty) keeps its output line, so output line N is still input line N.
    if (r.at("skipped").b) {
      out += "Total: 0 OOV: 0\n";
      return;
    }
    if (r.at("detail").s == "word")
      for (const auto& w : r.at("words").list) {
        const Record word{"", w.fields};
        const bool oov = word.at("oov").b;
        // KenLM's </s> and its id 0 for every OOV (<unk>); other ids are the model's.
        out += word.at("eos").b ? std::string("</s>") : escape_text(word.at("token").s);
        out +=
            "=" + std::to_string(oov ? 0 : word.at("id").i) + " " + std::to_string(word.at("ngram").i) + " ";
        const Value& lp = word.at("log10prob");
        out += shortest(lp.kind == Value::Kind::Null ? 0.0f : static_cast<float>(lp.d)) + "\t";
      }
    out += "Total: " + shortest(static_cast<float>(r.at("log10prob").d)) +
           " OOV: " + std::to_string(r.at("oovs").i) + "\n";
  }

  static void summary(const Record& r, std::string& out) {
    out += "Perplexity including OOVs:\t" + shortest(r.at("perplexity").d) +
           "\nPerplexity excluding OOVs:\t" + shortest(r.at("perplexity_excl_oov").d) + "\nOOVs:\t" +
           std::to_string(r.at("oovs").i) + "\nTokens:\t" + std::to_string(r.at("tokens").i) + "\n";
  }
};

}  // namespace

std::unique_ptr<Writer> make_kenlm_writer() { return std::make_unique<KenlmWriter>(); }

}  // namespace lstmlm::report
