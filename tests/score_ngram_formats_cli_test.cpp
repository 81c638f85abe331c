// `lstmlm score --output-format kenlm|srilm` on the bundled word model, for pipelines that parse those
// tools' output: the line structure of KenLM's query and SRILM's ngram -ppl, every number against score's
// own jsonl (log10 of the same log-probs, to the printed precision), totals and perplexities recomputed
// here with the tools' formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "test_util.hpp"

namespace {

using lstmlm::test::run_cli;
using lstmlm::test::source_dir;

using lstmlm::test::model_arg;
// An empty line (scored as just eos) and two OOVs (scored as <unk>).
using lstmlm::test::kScoreText;

using lstmlm::test::split_lines;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  size_t start = 0, at;
  while ((at = s.find(sep, start)) != std::string::npos) {
    v.push_back(s.substr(start, at - start));
    start = at + 1;
  }
  v.push_back(s.substr(start));
  return v;
}

std::vector<nlohmann::json> word_records(const std::string& args) {
  auto r = run_cli("score " + model_arg() + " --output-format jsonl -v word " + args, kScoreText);
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<nlohmann::json> v;
  for (const auto& l : split_lines(r.out)) v.push_back(nlohmann::json::parse(l));
  return v;
}

// The layouts are parsed by splitting fields, not with <regex>: GCC 12 warns inside <regex> under the
// sanitizer flags (-Wmaybe-uninitialized, a false positive), and the build keeps zero warnings.
bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A number written in full (strtod reads all of it): "-inf", "0.5", "1e-07".
std::optional<double> number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// KenLM query's "WORD=ID LENGTH LOG10PROB".
struct KenlmWord {
  std::string token;
  int id = 0;
  unsigned length = 0;
  double log10prob = 0;
};
std::optional<KenlmWord> kenlm_word(const std::string& field) {
  auto parts = split(field, ' ');
  if (parts.size() != 3) return std::nullopt;
  const size_t eq = parts[0].rfind('=');
  if (eq == std::string::npos || eq == 0 || !all_digits(parts[0].substr(eq + 1)) || !all_digits(parts[1]))
    return std::nullopt;
  auto lp = number(parts[2]);
  if (!lp) return std::nullopt;
  return KenlmWord{parts[0].substr(0, eq), std::stoi(parts[0].substr(eq + 1)),
                   static_cast<unsigned>(std::stoul(parts[1])), *lp};
}

// The values of "NAME1 V1 NAME2 V2 ..." when the names are exactly `names` (space-separated fields).
std::optional<std::vector<std::string>> named_values(const std::string& line,
                                                     const std::vector<std::string>& names) {
  auto parts = split(line, ' ');
  if (parts.size() != 2 * names.size()) return std::nullopt;
  std::vector<std::string> values;
  for (size_t i = 0; i < names.size(); ++i) {
    if (parts[2 * i] != names[i] || parts[2 * i + 1].empty()) return std::nullopt;
    values.push_back(parts[2 * i + 1]);
  }
  return values;
}

// SRILM's "\tp( WORD | PREV[ ...]) \t= [Ngram|OOV] P [ LOG10 ]".
struct SrilmProb {
  std::string word, previous, tag, p, log10;
  bool more = false;  // " ..." after PREV: more than one token of context
};
std::optional<SrilmProb> srilm_prob(const std::string& line) {
  const std::string head = "\tp( ", mid = ") \t= ";
  const size_t at = line.find(mid);
  if (line.rfind(head, 0) != 0 || at == std::string::npos) return std::nullopt;
  auto left = split(line.substr(head.size(), at - head.size()), ' ');
  auto right = split(line.substr(at + mid.size()), ' ');
  SrilmProb r;
  // left: WORD | PREV "..." with more context, or WORD | PREV "" (a blank before ")"); PREV may be empty.
  if (left.size() != 4 || left[1] != "|" || (left[3] != "..." && !left[3].empty())) return std::nullopt;
  r.word = left[0];
  r.previous = left[2];
  r.more = left[3] == "...";
  if (right.size() != 5 || right[2] != "[" || right[4] != "]" || right[0].size() < 3 ||
      right[0].front() != '[' || right[0].back() != ']')
    return std::nullopt;
  r.tag = right[0].substr(1, right[0].size() - 2);
  r.p = right[1];
  r.log10 = right[3];
  return r;
}

// Printed to float precision (kenlm) or 7 digits (srilm): equal to that precision.
void expect_near_rel(double got, double want, double rel, const std::string& what) {
  EXPECT_NEAR(got, want, rel * std::max(1.0, std::fabs(want))) << what;
}

TEST(ScoreKenlm, WordLevelIsQuerysLayoutWithScoresNumbers) {
  auto j = word_records("");
  auto r = run_cli("score " + model_arg() + " --output-format kenlm", kScoreText);
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = split_lines(r.out);
  ASSERT_EQ(out.size(), 4u + 4u);  // one per input line, then the four summary lines
  for (size_t i = 0; i < 4; ++i) {
    const auto& want = j[i]["words"];
    auto fields = split(out[i], '\t');
    ASSERT_EQ(fields.size(), want.size() + 1) << out[i];
    double sum = 0;
    for (size_t k = 0; k < want.size(); ++k) {
      auto w = kenlm_word(fields[k]);
      ASSERT_TRUE(w) << fields[k];
      const bool eos = k + 1 == want.size();
      EXPECT_EQ(w->token, eos ? "</s>" : want[k]["token"].get<std::string>());
      EXPECT_EQ(w->id, want[k]["oov"].get<bool>() ? 0 : want[k]["id"].get<int>());
      EXPECT_EQ(w->length, k + 2) << "sentence mode: <s> + the words before it + itself";
      const double p = w->log10prob;
      expect_near_rel(p, want[k]["log10prob"].get<double>(), 1e-6, fields[k]);
      sum += p;
    }
    const std::string& total = fields.back();
    auto v = named_values(total, {"Total:", "OOV:"});
    ASSERT_TRUE(v && number((*v)[0]) && all_digits((*v)[1])) << total;
    expect_near_rel(*number((*v)[0]), sum, 1e-6, total);
    expect_near_rel(*number((*v)[0]), j[i]["log10prob"].get<double>(), 1e-6, total);
    EXPECT_EQ(std::stoi((*v)[1]), j[i]["oovs"].get<int>());
  }
  const auto& s = j.back();
  ASSERT_EQ(s["type"], "summary");
  auto value = [&](size_t i, const std::string& name) {
    EXPECT_EQ(out[i].rfind(name + ":\t", 0), 0u) << out[i];
    return std::stod(out[i].substr(name.size() + 2));
  };
  expect_near_rel(value(4, "Perplexity including OOVs"), s["perplexity"].get<double>(), 1e-8, out[4]);
  expect_near_rel(value(5, "Perplexity excluding OOVs"), s["perplexity_excl_oov"].get<double>(), 1e-8,
                  out[5]);
  EXPECT_EQ(value(6, "OOVs"), 2);
  EXPECT_EQ(value(7, "Tokens"), s["tokens"].get<double>());
  EXPECT_EQ(split(out[2], '\t')[1].rfind("queen=0 ", 0), 0u) << "an OOV has KenLM's <unk> id 0";
}

TEST(ScoreKenlm, VerbosityLevelsAreQuerysLevels) {
  auto word = split_lines(run_cli("score " + model_arg() + " --output-format kenlm", kScoreText).out);
  auto sentence =
      split_lines(run_cli("score " + model_arg() + " --output-format kenlm -v sentence", kScoreText).out);
  auto summary =
      split_lines(run_cli("score " + model_arg() + " --output-format kenlm -v summary", kScoreText).out);
  ASSERT_EQ(sentence.size(), 8u);
  ASSERT_EQ(summary.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sentence[i], word[i].substr(word[i].rfind('\t') + 1)) << "the Total part of the word line";
    EXPECT_EQ(sentence[i + 4], word[i + 4]);
    EXPECT_EQ(summary[i], word[i + 4]);
  }
}

TEST(ScoreKenlm, DocumentContextGrowsAcrossLines) {
  auto out = split_lines(
      run_cli("score " + model_arg() + " --output-format kenlm --context document", kScoreText).out);
  ASSERT_GE(out.size(), 2u);
  // Line 1 feeds the start token, 8 words and eos: line 2's eos has 10 tokens of context.
  EXPECT_EQ(out[1].rfind("</s>=1 11 ", 0), 0u) << out[1];
}

TEST(ScoreKenlm, LengthCountsOnlyTheContextFed) {
  // With --no-bos nothing precedes "the": it is context only (length 0), "old" has one token of context
  // ("the": length 2), and so on; with the start token every length is one more. An OOV without unk would
  // not be fed (the bundled model has unk, so every word here is fed).
  const std::string text = "the old man went\n";
  auto lengths = [&](const std::string& args) {
    auto r = run_cli("score " + model_arg() + " --output-format kenlm " + args, text);
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<std::string> out;
    for (const auto& field : split(split_lines(r.out).at(0), '\t')) {
      auto parts = split(field, ' ');
      if (parts.size() == 3 && parts[0].find('=') != std::string::npos) out.push_back(parts[1]);
    }
    return out;
  };
  EXPECT_EQ(lengths("--no-bos"), (std::vector<std::string>{"0", "2", "3", "4", "5"}));
  EXPECT_EQ(lengths(""), (std::vector<std::string>{"2", "3", "4", "5", "6"}));
  // Document mode without a start token: line 2's first word follows the 5 tokens line 1 fed.
  auto doc =
      run_cli("score " + model_arg() + " --output-format kenlm --context document --no-bos", text + "the\n");
  EXPECT_EQ(split_lines(doc.out).at(1).rfind("the=2 6 ", 0), 0u) << doc.out;
}

TEST(ScoreKenlm, SkippedLineKeepsItsOutputLine) {
  auto out = split_lines(
      run_cli("score " + model_arg() + " --output-format kenlm --skip-empty -v sentence", kScoreText).out);
  ASSERT_EQ(out.size(), 8u);
  EXPECT_EQ(out[1], "Total: 0 OOV: 0");
}

// SRILM's statistics of one sentence (or file) from score's jsonl words: words exclude </s>, OOVs have no
// probability and are excluded from logprob.
struct Srilm {
  int sentences = 0, words = 0, oovs = 0;
  double logprob = 0;
  void add(const nlohmann::json& line) {
    for (const auto& w : line["words"]) {
      if (w["token"] == "<eos>") {
        ++sentences;
      } else {
        ++words;
      }
      if (w["oov"].get<bool>())
        ++oovs;
      else
        logprob += w["log10prob"].get<double>();
    }
  }
  double ppl() const { return std::pow(10.0, -logprob / (words - oovs + sentences)); }
  double ppl1() const { return std::pow(10.0, -logprob / (words - oovs)); }
};

void expect_stats(const std::vector<std::string>& out, size_t at, const Srilm& want,
                  const std::string& prefix) {
  ASSERT_LT(at + 1, out.size());
  EXPECT_EQ(out[at], prefix + std::to_string(want.sentences) + " sentences, " + std::to_string(want.words) +
                         " words, " + std::to_string(want.oovs) + " OOVs");
  ASSERT_EQ(out[at + 1].rfind("0 zeroprobs, ", 0), 0u) << out[at + 1];
  auto v =
      named_values(out[at + 1].substr(std::string("0 zeroprobs, ").size()), {"logprob=", "ppl=", "ppl1="});
  ASSERT_TRUE(v && number((*v)[0]) && number((*v)[1])) << out[at + 1];
  expect_near_rel(*number((*v)[0]), want.logprob, 1e-6, out[at + 1]);
  expect_near_rel(*number((*v)[1]), want.ppl(), 1e-6, out[at + 1]);
  if (want.words == want.oovs)  // the empty line: no word to average over
    EXPECT_EQ((*v)[2], "undefined");
  else
    expect_near_rel(number((*v)[2]).value_or(NAN), want.ppl1(), 1e-6, out[at + 1]);
}

TEST(ScoreSrilm, Debug2IsNgramPplsLayoutWithScoresNumbers) {
  auto j = word_records("");
  auto r = run_cli("score " + model_arg() + " --output-format srilm", kScoreText);
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = split_lines(r.out);
  size_t at = 0;
  Srilm file;
  for (size_t i = 0; i < 4; ++i) {
    const auto& words = j[i]["words"];
    std::string sentence;
    for (size_t k = 0; k + 1 < words.size(); ++k)
      sentence += (k ? " " : "") + words[k]["token"].get<std::string>();
    ASSERT_LT(at, out.size());
    EXPECT_EQ(out[at++], sentence);
    for (size_t k = 0; k < words.size(); ++k, ++at) {
      auto m = srilm_prob(out[at]);
      ASSERT_TRUE(m) << out[at];
      const bool eos = k + 1 == words.size(), oov = words[k]["oov"].get<bool>();
      EXPECT_EQ(m->word, eos ? "</s>" : words[k]["token"].get<std::string>());
      EXPECT_EQ(m->previous, k == 0 ? "<s>" : words[k - 1]["token"].get<std::string>());
      EXPECT_EQ(m->more, k > 0) << out[at];
      if (oov) {
        EXPECT_EQ(m->tag, "OOV");
        EXPECT_EQ(m->p, "0");
        EXPECT_EQ(m->log10, "-inf");
      } else {
        const double lp = words[k]["log10prob"].get<double>();
        EXPECT_EQ(m->tag, std::to_string(k + 2) + "gram");
        ASSERT_TRUE(number(m->p) && number(m->log10)) << out[at];
        expect_near_rel(*number(m->p), std::pow(10.0, lp), 1e-6, out[at]);
        expect_near_rel(*number(m->log10), lp, 1e-6, out[at]);
      }
    }
    Srilm s;
    s.add(j[i]);
    file.add(j[i]);
    expect_stats(out, at, s, "");
    at += 2;
    ASSERT_LT(at, out.size());
    EXPECT_EQ(out[at++], "") << "a blank line after each sentence";
  }
  EXPECT_EQ(file.oovs, 2);
  EXPECT_EQ(file.sentences, 4);
  expect_stats(out, at, file, "file -: ");
  EXPECT_EQ(at + 2, out.size());
}

TEST(ScoreSrilm, VerbosityLevelsAreDebugLevels) {
  auto debug2 = split_lines(run_cli("score " + model_arg() + " --output-format srilm", kScoreText).out);
  auto debug1 =
      split_lines(run_cli("score " + model_arg() + " --output-format srilm -v sentence", kScoreText).out);
  auto debug0 =
      split_lines(run_cli("score " + model_arg() + " --output-format srilm -v summary", kScoreText).out);
  std::vector<std::string> without_probs;
  for (const auto& l : debug2)
    if (l.rfind("\tp( ", 0) != 0) without_probs.push_back(l);
  EXPECT_EQ(debug1, without_probs);
  ASSERT_EQ(debug0.size(), 2u);
  EXPECT_EQ(debug0[0], debug2[debug2.size() - 2]);
  EXPECT_EQ(debug0[1], debug2.back());
  EXPECT_EQ(debug0[0], "file -: 4 sentences, 15 words, 2 OOVs");
}

TEST(ScoreSrilm, OneSummaryPerFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lstmlm_srilm_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a.txt") << "once upon a time\n";
  std::ofstream(dir / "b.txt") << "the king\nthe queen zzqx\n";
  auto out = split_lines(run_cli("score " + model_arg() + " --output-format srilm -v summary '" +
                                 (dir / "a.txt").string() + "' '" + (dir / "b.txt").string() + "'")
                             .out);
  fs::remove_all(dir);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0], "file " + (dir / "a.txt").string() + ": 1 sentences, 4 words, 0 OOVs");
  EXPECT_EQ(out[2], "file " + (dir / "b.txt").string() + ": 2 sentences, 5 words, 2 OOVs");
}

TEST(ScoreNgramFormats, RefusedCombinations) {
  for (std::string f : {"kenlm", "srilm"}) {
    for (std::string opt : {"--units ln", "--units bits", "--entropy", "--rank"}) {
      auto r = run_cli("score " + model_arg() + " --output-format " + f + " " + opt, "a b\n");
      EXPECT_EQ(r.status, 2) << f << " " << opt << ": " << r.err;
    }
    EXPECT_EQ(run_cli("score " + model_arg() + " --output-format " + f + " --units log10", "a b\n").status,
              0);
    EXPECT_EQ(run_cli("predict " + model_arg() + " --output-format " + f + " the", "").status, 2)
        << "score only";
  }
}

// The tsv check end to end: a file name with a tab stays one cell, so the columns stay aligned.
TEST(ScoreNgramFormats, TsvFileNameWithATabKeepsTheHeadersFieldCount) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lstmlm_tsvtab_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "a\tb.txt";
  std::ofstream(file) << "the king\n";
  auto r = run_cli("score " + model_arg() + " --output-format tsv '" + file.string() + "'");
  fs::remove_all(dir);
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = split_lines(r.out);
  ASSERT_EQ(out.size(), 4u);
  for (const auto& l : out) EXPECT_EQ(split(l, '\t').size(), 8u) << l;
}

}  // namespace
