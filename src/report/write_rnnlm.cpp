// rnnlm: the layout of Mikolov's RNNLM toolkit's `rnnlm -test FILE -debug 2` (0.3e, testNet), so scripts that
// read its output read lstmlm's. After the two heading lines, one line per word fed: "ID\tP\tWORD" with P to
// 10 decimals, "-1\t0\t\tOOV" for a word outside the vocabulary (not scored), then per input file
//   test log probability: L
//   PPL net: P
// with L the sum of log10 p over the scored words and P = 10^(-L / scored words), as rnnlm prints them (%f).
// -v sentence and summary print the totals only (rnnlm's -debug 1).
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "lstmlm/report/record.hpp"

namespace lstmlm::report {

namespace {

std::string fixed(double v, int decimals) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// rnnlm prints a word as it is (a backslash too); one holding a control character is escaped, to keep a line
// one line.
std::string word_text(const std::string& w) {
  for (unsigned char c : w)
    if (c < 0x20 || c == 0x7f) return escape_text(w);
  return w;
}

class RnnlmWriter final : public Writer {
 public:
  void record(const Record& r, std::string& out) override {
    if (r.kind == "score.line") return line(r, out);
    if (r.kind == "score.summary") {
      if (!seen_) file_ = r.at("file").s;
      return end_file(out);
    }
    throw std::logic_error("the rnnlm format has no layout for " + r.kind + " records");
  }

 private:
  void end_file(std::string& out) {
    out += "\ntest log probability: " + fixed(logprob_, 6) + "\n";
    out += "\nPPL net: " + fixed(words_ > 0 ? std::pow(10.0, -logprob_ / double(words_)) : NAN, 6) + "\n";
    logprob_ = 0;
    words_ = 0;
    heading_ = false;
  }

  void line(const Record& r, std::string& out) {
    const std::string& file = r.at("file").s;
    if (seen_ && file != file_) end_file(out);
    seen_ = true;
    file_ = file;
    if (r.at("skipped").b) return;
    const bool per_word = r.at("detail").s == "word";
    if (per_word && !heading_) {
      out += "Index   P(NET)          Word\n----------------------------------\n";
      heading_ = true;
    }
    for (const auto& w : r.at("words").list) {
      const Record word{"", w.fields};
      const int64_t id = word.at("id").i;
      const Value& lp = word.at("log10prob");
      const bool scored = word.at("ngram").i > 0;
      if (scored) {
        logprob_ += lp.d;
        ++words_;
      }
      if (!per_word || (!scored && id >= 0)) continue;  // a context-only start token: no line in rnnlm
      if (!scored)
        out += "-1\t0\t\tOOV\n";
      else
        out += std::to_string(id) + "\t" + fixed(std::pow(10.0, lp.d), 10) + "\t" +
               word_text(word.at("token").s) + "\n";
    }
  }

  bool seen_ = false, heading_ = false;
  std::string file_;
  double logprob_ = 0;  // log10, the scored words'
  int64_t words_ = 0;
};

}  // namespace

std::unique_ptr<Writer> make_rnnlm_writer() { return std::make_unique<RnnlmWriter>(); }

}  // namespace lstmlm::report
