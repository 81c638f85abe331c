// `lstmlm rescore` end to end on the bundled word model: the LM numbers are `score`'s (compared as the
// printed text, so bit for bit at 9 digits), the three input forms agree, and every malformed list is a
// one-line error naming the file and line after the utterances before it were written.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jsonl_records.hpp"
#include "test_util.hpp"

namespace {

using lstmlm::test::run_cli;
namespace fs = std::filesystem;

using lstmlm::test::model_arg;

using lstmlm::test::jsonl_records;

// A file in a fresh temporary directory, removed with it.
class Files {
 public:
  Files()
      : dir_(fs::temp_directory_path() /
             ("lstmlm_rescore_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++))) {
    fs::create_directories(dir_);
  }
  ~Files() { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return "'" + (dir_ / name).string() + "'";
  }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
};

const std::vector<std::string> kHyps = {"once upon a time there was a king",
                                        "once upon a time there was a queen",
                                        "once upon a time there was",
                                        "",
                                        "the king zzqx said",
                                        "the king"};
const std::vector<std::string> kUtts = {"spk1-utt1", "spk1-utt1", "spk1-utt1",
                                        "spk1-utt2", "spk1-utt3", "spk1-utt3"};

std::string kaldi_text() {
  std::string s;
  for (size_t i = 0; i < kHyps.size(); ++i) {
    int n = 1;
    for (size_t k = 0; k < i; ++k) n += kUtts[k] == kUtts[i];
    s += kUtts[i] + "-" + std::to_string(n) + (kHyps[i].empty() ? "" : " " + kHyps[i]) + "\n";
  }
  return s;
}

TEST(RescoreCli, LmScoresAreScoresNumbersBitForBit) {
  std::string lines;
  for (const auto& h : kHyps) lines += h + "\n";
  auto s = run_cli("score " + model_arg() + " -v sentence --output-format jsonl", lines);
  ASSERT_EQ(s.status, 0) << s.err;
  for (const char* threads : {"1", "2"}) {
    auto r = run_cli("rescore " + model_arg() + " --output-format jsonl --batch-size 2 --threads " + threads,
                     kaldi_text());
    ASSERT_EQ(r.status, 0) << r.err;
    auto want = jsonl_records(s.out), got = jsonl_records(r.out);
    ASSERT_EQ(got.size(), kHyps.size() + 1);
    for (size_t i = 0; i < kHyps.size(); ++i) {
      EXPECT_EQ(got[i]["lm_logprob"].dump(), want[i]["logprob"].dump()) << i;
      EXPECT_EQ(got[i]["lm_log10prob"].dump(), want[i]["log10prob"].dump()) << i;
      EXPECT_EQ(got[i]["tokens"], want[i]["tokens"]);
      EXPECT_EQ(got[i]["oovs"], want[i]["oovs"]);
      EXPECT_EQ(got[i]["hyp"], kHyps[i]);
    }
    const auto& sum = got.back();
    EXPECT_EQ(sum["type"], "summary");
    EXPECT_EQ(sum["utterances"], 3);
    EXPECT_EQ(sum["hypotheses"], 6);
    EXPECT_LT(sum["computed"].get<int64_t>(),
              sum["steps"].get<int64_t>());  // "once upon a time there" ran once
  }
}

TEST(RescoreCli, ScoreFilesWeightsAndBestAsKaldiText) {
  Files f;
  auto ac = f.write("ac",
                    "spk1-utt1-1 -100\nspk1-utt1-2 -90\nspk1-utt1-3 -130\nspk1-utt2-1 -5\n"
                    "spk1-utt3-1 -20\nspk1-utt3-2 -60\n");
  auto nb = f.write("nbest", kaldi_text());
  auto r = run_cli("rescore " + model_arg() + " " + nb + " --scores ac=" + ac +
                   " --weight ac=0.5 --lm-weight 2 " + "--word-penalty -1 --output-format jsonl");
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = jsonl_records(r.out);
  const double ac_values[] = {-100, -90, -130, -5, -20, -60};
  for (size_t i = 0; i < kHyps.size(); ++i) {
    const auto& h = got[i];
    EXPECT_EQ(h["scores"]["ac"], ac_values[i]);
    // combined = 0.5 ac + 2 lm - 1 words (the formula of rescore --help)
    double want = 0.5 * ac_values[i] + 2 * h["lm_logprob"].get<double>() - h["words"].get<double>();
    EXPECT_NEAR(h["combined"].get<double>(), want, 1e-5 * std::abs(want));
  }
  // Best per utterance = the highest combined; --best in text is Kaldi's "UTT words" form.
  std::string want_best;
  for (size_t b = 0, e; b < kHyps.size(); b = e) {
    size_t best = b;
    for (e = b; e < kHyps.size() && kUtts[e] == kUtts[b]; ++e)
      if (got[e]["combined"].get<double>() > got[best]["combined"].get<double>()) best = e;
    for (size_t i = b; i < e; ++i) EXPECT_EQ(got[i]["best"], i == best) << i;
    want_best += kUtts[b] + (kHyps[best].empty() ? "" : " " + kHyps[best]) + "\n";
  }
  auto best = run_cli("rescore " + model_arg() + " " + nb + " --scores ac=" + ac +
                      " --weight ac=0.5 --lm-weight 2 --word-penalty -1 --best");
  ASSERT_EQ(best.status, 0) << best.err;
  EXPECT_EQ(best.out, want_best);
}

TEST(RescoreCli, TsvAndJsonlInputsGiveTheKaldiNumbers) {
  Files f;
  std::string tsv = "utt\thyp\tac\n", js;
  const double ac[] = {-1, -2, -3, -4, -5, -6};
  for (size_t i = 0; i < kHyps.size(); ++i) {
    tsv += kUtts[i] + "\t" + kHyps[i] + "\t" + std::to_string(ac[i]) + "\n";
    js += nlohmann::json{{"utt", kUtts[i]}, {"hyp", kHyps[i]}, {"scores", {{"ac", ac[i]}}}}.dump() + "\n";
  }
  auto kaldi = run_cli("rescore " + model_arg() + " --output-format jsonl", kaldi_text());
  auto t = run_cli("rescore " + model_arg() + " " + f.write("n.tsv", tsv) +
                   " --weight ac=1 --output-format jsonl");
  auto j = run_cli("rescore " + model_arg() + " " + f.write("n.jsonl", js) +
                   " --weight ac=1 --output-format jsonl");
  ASSERT_EQ(kaldi.status, 0) << kaldi.err;
  ASSERT_EQ(t.status, 0) << t.err;
  ASSERT_EQ(j.status, 0) << j.err;
  auto k = jsonl_records(kaldi.out), a = jsonl_records(t.out), b = jsonl_records(j.out);
  for (size_t i = 0; i < kHyps.size(); ++i) {
    EXPECT_EQ(a[i]["lm_logprob"], k[i]["lm_logprob"]);
    EXPECT_EQ(b[i]["lm_logprob"], k[i]["lm_logprob"]);
    EXPECT_EQ(a[i]["id"], k[i]["id"]);  // made as UTT-N, N the position in the utterance
    EXPECT_NEAR(a[i]["combined"].get<double>(), k[i]["lm_logprob"].get<double>() + ac[i], 1e-5);
    EXPECT_EQ(a[i]["combined"], b[i]["combined"]);
  }
  // tsv output: a header, one row per hypothesis, the score as its own column.
  auto tv = run_cli("rescore " + model_arg() + " " + f.write("m.tsv", tsv) + " --output-format tsv");
  ASSERT_EQ(tv.status, 0) << tv.err;
  EXPECT_EQ(tv.out.substr(0, tv.out.find('\n')),
            "file\tutt\tid\tn\ttokens\toovs\twords\tlm_logprob\tlm_log10prob\tac\tcombined\tbest\thyp");
  EXPECT_EQ(std::count(tv.out.begin(), tv.out.end(), '\n'), 7);
}

// One hypothesis per utterance in conversation context is document mode over the lines.
TEST(RescoreCli, ConversationWithOneHypothesisPerUtteranceIsDocumentMode) {
  std::string nb, lines;
  const std::vector<std::string> text = {"the king had a daughter", "she was fair", "", "and the king died"};
  for (size_t i = 0; i < text.size(); ++i) {
    nb += "u" + std::to_string(i) + "-1 " + text[i] + "\n";
    lines += text[i] + "\n";
  }
  auto d = run_cli("score " + model_arg() + " -v sentence --context document --output-format jsonl", lines);
  auto c = run_cli("rescore " + model_arg() + " --context conversation --output-format jsonl", nb);
  auto u = run_cli("rescore " + model_arg() + " --output-format jsonl", nb);
  ASSERT_EQ(d.status, 0) << d.err;
  ASSERT_EQ(c.status, 0) << c.err;
  auto dj = jsonl_records(d.out), cj = jsonl_records(c.out), uj = jsonl_records(u.out);
  for (size_t i = 0; i < text.size(); ++i)
    EXPECT_EQ(cj[i]["lm_logprob"].dump(), dj[i]["logprob"].dump()) << i;
  EXPECT_NE(cj[1]["lm_logprob"], uj[1]["lm_logprob"]);  // the context changed the second utterance
}

TEST(RescoreCli, TenThousandHypothesesOfOneUtterance) {
  std::string nb;
  const char* words[] = {"king",     "queen",  "castle", "forest", "wolf",
                         "princess", "dragon", "night",  "day",    "sun"};
  for (int n = 1; n <= 10000; ++n)
    nb += "utt-" + std::to_string(n) + " once upon a time there was a " + words[n % 10] + " and a " +
          words[(n / 10) % 10] + " " + words[(n / 100) % 10] + "\n";
  auto r = run_cli("rescore " + model_arg() + " --output-format tsv", nb);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 10001);
  auto best = run_cli("rescore " + model_arg() + " --best", nb);
  ASSERT_EQ(best.status, 0) << best.err;
  EXPECT_EQ(std::count(best.out.begin(), best.out.end(), '\n'), 1);
  EXPECT_EQ(best.out.rfind("utt once upon a time there was a ", 0), 0u) << best.out;
}

struct Bad {
  std::string input, message;
  int status;
  size_t written = 0;  // records written before the error
};

TEST(RescoreCli, MalformedListsAreOneLineErrorsAfterTheUtterancesBefore) {
  const std::string good = "a-1 the king\na-2 the queen\nb-1 the wolf\n";
  const std::vector<Bad> cases = {
      // A line without an id could belong to utterance b: b cannot have a best, only a is written.
      {good + "\nc-1 x\n", "-:4: a line without a hypothesis id", 1, 2},
      {good + "the queen said\n", "-:4: hypothesis id 'the' is not UTT-N", 1, 2},
      {good + "c-x the\n", "-:4: hypothesis id 'c-x' is not UTT-N", 1, 2},
      // The bad line names another utterance: a and b are complete and written.
      {good + "a-3 the\n", "-:4: utterance 'a' appears again after other utterances", 1, 3},
      {good + "c-1 the \xff king\n", "-:4: invalid UTF-8", 1, 3},
  };
  for (const auto& c : cases) {
    auto r = run_cli("rescore " + model_arg(), c.input);
    EXPECT_EQ(r.status, c.status) << c.input;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(size_t(std::count(r.out.begin(), r.out.end(), '\n')), c.written) << c.input << "\n" << r.out;
  }
}

// In conversation context a recording whose utterances are interleaved with another's would be scored
// without its own context: refused at the utterance that comes back, after the utterances before it.
// A hypothesis id given twice in one utterance would make the output ambiguous: refused too.
TEST(RescoreCli, InterleavedRecordingsAndDuplicateIdsAreRefused) {
  const std::string tsv =
      "recording\tutt\thyp\nA\ta1\tthe king had a daughter\nB\tb1\tthe wolf\nA\ta2\tshe was fair\n";
  auto c = run_cli("rescore " + model_arg() + " --input-format tsv --context conversation", tsv);
  EXPECT_EQ(c.status, 1) << c.err;
  EXPECT_EQ(
      c.err,
      "lstmlm: error: -:4: recording 'A' comes back after other recordings: with --context conversation "
      "the utterances of a recording must be contiguous (sort the list by recording, keeping the order "
      "within each)\n");
  EXPECT_EQ(std::count(c.out.begin(), c.out.end(), '\n'), 2) << c.out;  // a1 and b1, complete
  // Utterance context: the recordings do not matter.
  auto u = run_cli("rescore " + model_arg() + " --input-format tsv", tsv);
  EXPECT_EQ(u.status, 0) << u.err;
  // Contiguous recordings, each continued: accepted.
  const std::string sorted =
      "recording\tutt\thyp\nA\ta1\tthe king had a daughter\nA\ta2\tshe was fair\nB\tb1\tthe wolf\n";
  EXPECT_EQ(run_cli("rescore " + model_arg() + " --input-format tsv --context conversation", sorted).status,
            0);

  auto d = run_cli("rescore " + model_arg(), "a-1 the king\nb-1 the wolf\nb-2 the queen\nb-1 the sun\n");
  EXPECT_EQ(d.status, 1) << d.err;
  EXPECT_NE(d.err.find("-:4: hypothesis id 'b-1' appears twice in utterance 'b'"), std::string::npos)
      << d.err;
  EXPECT_EQ(std::count(d.out.begin(), d.out.end(), '\n'), 1) << d.out;  // utterance a only
  const std::string ids = "utt\tid\thyp\nu\tx\tthe king\nu\tx\tthe queen\n";
  auto t = run_cli("rescore " + model_arg() + " --input-format tsv", ids);
  EXPECT_EQ(t.status, 1) << t.err;
  EXPECT_NE(t.err.find("-:3: hypothesis id 'x' appears twice in utterance 'u'"), std::string::npos) << t.err;
}

TEST(RescoreCli, ScoreFileAndOptionErrors) {
  Files f;
  auto nb = f.write("nb", "a-1 the king\na-2 the queen\n");
  auto part = f.write("part", "a-1 -3\n");
  auto extra = f.write("extra", "a-1 -3\na-2 -4\nz-9 1\n");
  auto word = f.write("word", "a-1 -3\na-2 minus\n");
  auto tsv = f.write("n.tsv", "utt\thyp\tac\na\tthe king\t-1\n");
  const std::vector<Bad> cases = {
      {"--scores ac=" + part, "hypothesis 'a-2' has no value in", 1},
      {"--scores ac=" + extra, "1 ids match no hypothesis (the first: 'z-9')", 1},
      {"--scores ac=" + word, ":2: 'minus' is not a finite number", 1},
      {"--scores ac=" + part + " --scores ac=" + part, "--scores: the name 'ac' is given twice", 2},
      {"--weight lm=1", "--weight lm=1: the LM's own weight is --lm-weight 1", 2},
      {"--weight ng=1", "--weight: no score named 'ng' in the input (its scores: none)", 2},
      {"--scores ac=" + extra + " --weight ac=nan", "--weight ac: 'nan' is not a finite number", 2},
      {"--interpolate 0.5", "--interpolate and --ngram go together", 2},
      {"--interpolate 1.5 --ngram ac", "--interpolate", 2},
      {"--scores ac=/no/such/file", "/no/such/file: cannot open", 1},
  };
  for (const auto& c : cases) {
    auto r = run_cli("rescore " + model_arg() + " " + nb + " " + c.input);
    EXPECT_EQ(r.status, c.status) << c.input << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.input << "\n" << r.err;
  }
  auto r = run_cli("rescore " + model_arg() + " " + tsv + " --scores ac=" + part);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("score files go with Kaldi n-best text"), std::string::npos) << r.err;
  auto bad_tsv = run_cli("rescore " + model_arg() + " " + f.write("b.tsv", "hyp\tac\nthe king\t1\n"));
  EXPECT_EQ(bad_tsv.status, 1);
  EXPECT_NE(bad_tsv.err.find("the columns 'utt' and 'hyp' are required"), std::string::npos) << bad_tsv.err;
  // A nested value is refused while it is parsed (no deep value is built); so is a number past a double.
  std::string deep = "{\"utt\": \"u\", \"hyp\": \"a\", \"scores\": {\"x\": " + std::string(100000, '[') +
                     std::string(100000, ']') + "}}\n";
  auto d = run_cli("rescore " + model_arg() + " " + f.write("d.jsonl", deep));
  EXPECT_EQ(d.status, 1);
  EXPECT_NE(d.err.find("d.jsonl:1: not a JSON object: 'nested deeper than 8 levels'"), std::string::npos)
      << d.err;
  auto big = run_cli("rescore " + model_arg() + " --input-format jsonl",
                     "{\"utt\":\"u\",\"hyp\":\"a\",\"scores\":{\"x\":1e999}}\n");
  EXPECT_EQ(big.status, 1);
  EXPECT_NE(big.err.find("-:1: not a JSON object: 'number overflow"), std::string::npos) << big.err;
  auto bad_js = run_cli("rescore " + model_arg() + " " + f.write("b.jsonl", "{\"hyp\": \"the king\"}\n"));
  EXPECT_EQ(bad_js.status, 1);
  EXPECT_NE(bad_js.err.find("b.jsonl:1: no \"utt\""), std::string::npos) << bad_js.err;
}

}  // namespace

// A tsv list of 300,000 score columns: the header and every table row are linear in their columns
// (the table writer indexes a record's fields once). Searched per column, the tsv output took 234 s on
// a Zen 5 core where it now takes under 2; the 60 s bound fails only the quadratic behaviour.
TEST(RescoreCli, ThreeHundredThousandScoreColumns) {
  Files f;
  const int n = 300000;
  std::string header = "utt\thyp", row = "u\tthe king";
  for (int k = 0; k < n; ++k) {
    header += "\ts" + std::to_string(k);
    row += "\t" + std::to_string(-(k % 7));
  }
  const std::string path = f.write("wide.tsv", header + "\n" + row + "\n");
  const std::string out = f.write("wide.out", "");
  const std::string cmd = "timeout 60 '" + lstmlm::test::cli() + "' rescore " + model_arg() + " " + path +
                          " --output-format tsv >" + out + " 2>/dev/null";
  const int raw = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(raw));
  ASSERT_EQ(WEXITSTATUS(raw), 0) << "124: timed out";
  std::ifstream in(out.substr(1, out.size() - 2));
  std::string h, r;
  std::getline(in, h);
  std::getline(in, r);
  const auto cells = [](const std::string& s) { return std::count(s.begin(), s.end(), '\t') + 1; };
  EXPECT_GT(cells(h), n);
  EXPECT_EQ(cells(r), cells(h));
  EXPECT_NE(h.find("\ts299999\t"), std::string::npos);
}
