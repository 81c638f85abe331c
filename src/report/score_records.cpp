#include <cmath>
#include <vector>

#include "lstmlm/report/score.hpp"
#include "lstmlm/units.hpp"

namespace lstmlm::report {

namespace {

// The log-prob fields of a value ln p (a word's, or a sum) in the chosen units; null when absent. Prob:
// a word's p, a sum's ln.
void add_logprob(Fields& f, Units u, bool present, double ln, bool word = false) {
  auto v = [&](double x) { return present ? Value::num9(x) : Value::null(); };
  switch (u) {
    case Units::Default:
      f.push_back({"logprob", v(ln)});
      f.push_back({"log10prob", v(ln / kLn10)});
      break;
    case Units::Ln:
      f.push_back({"logprob", v(ln)});
      break;
    case Units::Log10:
      f.push_back({"log10prob", v(ln / kLn10)});
      break;
    case Units::Bits:
      f.push_back({"surprisal", v(-ln / kLn2)});
      break;
    case Units::Prob:
      if (word)
        f.push_back({"prob", v(std::exp(ln))});
      else
        f.push_back({"logprob", v(ln)});
      break;
  }
}

std::vector<std::string> logprob_columns(Units u, bool word = false) {
  switch (u) {
    case Units::Prob:
      return {word ? "prob" : "logprob"};
    case Units::Default:
      return {"logprob", "log10prob"};
    case Units::Ln:
      return {"logprob"};
    case Units::Log10:
      return {"log10prob"};
    case Units::Bits:
      break;
  }
  return {"surprisal"};
}

// Entropy follows the units: nats (default, ln), bans (log10) or bits.
double entropy_in(Units u, double nats) {
  if (u == Units::Log10) return nats / kLn10;
  if (u == Units::Bits) return nats / kLn2;
  return nats;
}

const char* verbosity_name(Verbosity v) {
  if (v == Verbosity::Word) return "word";
  return v == Verbosity::Sentence ? "sentence" : "summary";
}

}  // namespace

bool ngram_layout(Format f) { return f == Format::Kenlm || f == Format::Srilm || f == Format::Rnnlm; }

Value word_record(const ScoreView& v, const tasks::WordScore& w, size_t position) {
  Fields f;
  if (v.format == Format::Lmzoo) f.push_back({"token_id", Value::integer(static_cast<int64_t>(position))});
  f.push_back({"token", Value::str(w.token)});
  if (!v.words) f.push_back({"id", Value::integer(w.id)});
  f.push_back({"oov", Value::boolean(w.oov)});
  add_logprob(f, v.units, w.scored, w.logprob, true);
  if (v.entropy)
    f.push_back({"entropy", w.scored ? Value::num9(entropy_in(v.units, w.entropy)) : Value::null()});
  if (v.rank) f.push_back({"rank", w.scored ? Value::integer(w.rank) : Value::null()});
  if (ngram_layout(v.format)) {
    // An LSTM conditions on everything since its reset: its "n-gram" is that context plus the word; 0
    // marks a token that is not scored (KenLM's lengths are never 0).
    f.push_back({"context", Value::integer(w.context), true});
    f.push_back({"ngram", Value::integer(!w.scored ? 0 : w.ngram > 0 ? w.ngram : w.context + 1), true});
    f.push_back({"eos", Value::boolean(w.eos), true});
  }
  return Value::of_record(std::move(f));
}

Record line_record(const ScoreView& v, const std::string& file, const tasks::LineScore& l, uint64_t sentence,
                   StreamPos pos) {
  Record r{"score.line",
           {{"type", Value::str("line")},
            {"file", Value::str(file)},
            {"line", Value::uinteger(l.line)},
            {"skipped", Value::boolean(l.skipped)}}};
  if (v.format == Format::Lmzoo) r.fields.push_back({"sentence_id", Value::uinteger(sentence)});
  add_logprob(r.fields, v.units, true, l.logprob);
  r.fields.push_back({"tokens", Value::integer(l.tokens)});
  r.fields.push_back({"oovs", Value::integer(l.oovs)});
  // Only when present, so every ordinary record keeps its fields (a NaN weight is the only known cause).
  if (l.nonfinite && v.format == Format::Jsonl)
    r.fields.push_back({"nonfinite", Value::integer(l.nonfinite)});
  if (v.logits) r.fields.push_back({"softmax", Value::str("skip")});
  if (ngram_layout(v.format)) {
    r.fields.push_back({"detail", Value::str(verbosity_name(v.verbosity)), true});
    r.fields.push_back({"reset", Value::boolean(pos.reset), true});
  }
  if (v.verbosity == Verbosity::Word || ngram_layout(v.format)) {
    std::vector<Value> words;
    words.reserve(l.words.size());
    for (size_t i = 0; i < l.words.size(); ++i) words.push_back(word_record(v, l.words[i], i + 1));
    r.fields.push_back({"words", Value::of_list(std::move(words))});
  }
  return r;
}

Record summary_record(const ScoreView& v, const tasks::ScoreSummary& s) {
  Record r{"score.summary",
           {{"type", Value::str("summary")},
            {"sentences", Value::integer(s.sentences)},
            {"skipped", Value::integer(s.skipped)},
            {"tokens", Value::integer(s.tokens)},
            {"oovs", Value::integer(s.oovs)}}};
  add_logprob(r.fields, v.units, true, s.logprob);
  r.fields.push_back({"perplexity", Value::num9(s.perplexity())});
  r.fields.push_back({"perplexity_excl_oov", Value::num9(s.perplexity_excl_oov())});
  if (s.nonfinite && v.format == Format::Jsonl)
    r.fields.push_back({"nonfinite", Value::integer(s.nonfinite)});
  if (v.logits) r.fields.push_back({"softmax", Value::str("skip")});
  return r;
}

Table score_table(const ScoreView& v) {
  std::vector<std::string> c;
  auto add = [&](std::vector<std::string> more) { c.insert(c.end(), more.begin(), more.end()); };
  auto measures = [&] {
    if (v.entropy) c.push_back("entropy");
    if (v.rank) c.push_back("rank");
  };
  // lm-zoo's get-surprisals table (docs/scoring.md): its four columns, then any measures asked for.
  if (v.format == Format::Lmzoo) {
    add({"sentence_id", "token_id", "token", "surprisal"});
    measures();
    if (v.logits) c.push_back("softmax");
    return {"score.line", c};
  }
  switch (v.verbosity) {
    case Verbosity::Word:
      add({"file", "line", "position", "token"});
      if (!v.words) c.push_back("id");
      c.push_back("oov");
      add(logprob_columns(v.units, true));
      measures();
      if (v.logits) c.push_back("softmax");
      return {"score.line", c};
    case Verbosity::Sentence:
      add({"file", "line", "skipped", "tokens", "oovs"});
      add(logprob_columns(v.units));
      if (v.logits) c.push_back("softmax");
      return {"score.line", c};
    case Verbosity::Summary:
      break;
  }
  add({"sentences", "skipped", "tokens", "oovs"});
  add(logprob_columns(v.units));
  add({"perplexity", "perplexity_excl_oov"});
  if (v.logits) c.push_back("softmax");
  return {"score.summary", c};
}

}  // namespace lstmlm::report
