// What a new user coming from KenLM or llama.cpp types in the first hour: their option names (-t, --temp,
// -f, -p, -s), a did-you-mean that names the long option, a model directory given where -m belongs,
// repeatable options that take one value each, errors that say the fix (a model's config.json, an ml5 or
// empty folder, gzip input, --weight lm=), notes that are short and only where they apply, and score's
// text output in words a user reads (which log, a probability column, a context-only token).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using lstmlm::test::run_cli;
using lstmlm::test::source_dir;

std::string word_dir() { return (source_dir() / "models" / "fairytales-word").string(); }
const std::string kFirstHourText = "once upon a time there was a king\nthe queen said\n";

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

using lstmlm::test::count_lines;
using lstmlm::test::model_arg;

// Exit `status`, nothing on stdout, one stderr line holding every piece.
void expect_error(const std::string& args, int status, const std::vector<std::string>& pieces,
                  const std::string& stdin_text = "") {
  auto r = run_cli(args, stdin_text);
  EXPECT_EQ(r.status, status) << args << "\n" << r.err;
  EXPECT_EQ(r.out, "") << args;
  EXPECT_EQ(r.err.rfind("lstmlm: error: ", 0), 0u) << args << "\n" << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << args << "\n" << r.err;
  for (const auto& p : pieces) EXPECT_NE(r.err.find(p), std::string::npos) << args << "\n" << r.err << p;
}

// ---- Habits -------------------------------------------------------------------------------------------

TEST(FirstHourCli, ShortThreadsOptionOnEverySubcommand) {
  auto base = run_cli("score " + model_arg() + " --threads 1", kFirstHourText);
  ASSERT_EQ(base.status, 0) << base.err;
  auto t = run_cli("score " + model_arg() + " -t 1", kFirstHourText);
  EXPECT_EQ(t.status, 0) << t.err;
  EXPECT_EQ(t.out, base.out);
  for (std::string sub : {"predict", "generate", "rescore", "fidelity", "serve", "bench"}) {
    auto h = run_cli(sub + " --help");
    EXPECT_EQ(h.status, 0) << sub;
    EXPECT_NE(h.out.find("-t,--threads"), std::string::npos) << sub << "\n" << h.out;
  }
  EXPECT_EQ(run_cli("predict " + model_arg() + " -t 1 --top 2 'the king'").status, 0);
  EXPECT_EQ(run_cli("generate " + model_arg() + " -t 1 -p the -n 3 --seed 1").status, 0);
  expect_error("score " + model_arg() + " -t 100000", 2, {"--threads", "100000 is not in [0, "});
}

TEST(FirstHourCli, LlamaCppNamesInGenerate) {
  auto a = run_cli("generate " + model_arg() + " -p 'the king' -n 8 --temperature 0.7 --seed 5");
  ASSERT_EQ(a.status, 0) << a.err;
  auto b = run_cli("generate " + model_arg() + " -p 'the king' -n 8 --temp 0.7 -s 5");
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  lstmlm::test::TempDir tmp("first_hour_gen");
  write(tmp / "prompt.txt", "the king\n");
  auto f =
      run_cli("generate " + model_arg() + " -f '" + (tmp / "prompt.txt").string() + "' -n 8 --temp 0.7 -s 5");
  ASSERT_EQ(f.status, 0) << f.err;
  EXPECT_EQ(f.out, a.out);
}

TEST(FirstHourCli, FileOptionReadsAnInputFile) {
  lstmlm::test::TempDir tmp("first_hour_f");
  const std::string file = (tmp / "in.txt").string();
  write(file, kFirstHourText);
  auto pos = run_cli("score " + model_arg() + " '" + file + "'");
  ASSERT_EQ(pos.status, 0) << pos.err;
  auto f = run_cli("score " + model_arg() + " -f '" + file + "'");
  ASSERT_EQ(f.status, 0) << f.err;
  EXPECT_EQ(f.out, pos.out);
  // Repeatable, one file each, the positional after it still a file.
  auto two = run_cli("score " + model_arg() + " -v sentence -f '" + file + "' '" + file + "'");
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_EQ(count_lines(two.out), 4u + 5u) << two.out;  // 2 + 2 lines, then the summary
  EXPECT_EQ(run_cli("fidelity " + model_arg() + " --precision fp32 -f '" + file + "'").status, 0);

  // predict: -f FILE gives a context per line, -p TEXT one context, as the positional does.
  auto stdin_run = run_cli("predict " + model_arg() + " --top 3", kFirstHourText);
  auto from_file = run_cli("predict " + model_arg() + " --top 3 -f '" + file + "'");
  ASSERT_EQ(from_file.status, 0) << from_file.err;
  EXPECT_EQ(from_file.out, stdin_run.out);
  auto arg = run_cli("predict " + model_arg() + " --top 3 'the queen said'");
  auto p = run_cli("predict " + model_arg() + " --top 3 -p 'the queen said'");
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_EQ(p.out, arg.out);
  expect_error("predict " + model_arg() + " -f '" + file + "' 'the king'", 2, {"-f/--file", "not both"});
}

TEST(FirstHourCli, DidYouMeanNamesTheLongOption) {
  // A prefix of one long option, a typo of one, a single-dash long name.
  expect_error("predict " + model_arg() + " --pad 3 the", 2,
               {"unknown option --pad; did you mean --pad-to?"});
  expect_error("score " + model_arg() + " --verbos word", 2, {"did you mean --verbosity?"});
  expect_error("generate " + model_arg() + " --tmperature 1", 2, {"did you mean --temperature?"});
  expect_error("score " + model_arg() + " -context document", 2, {"did you mean --context?"});
  expect_error("generate " + model_arg() + " --top 3", 2, {"did you mean --top-k or --top-p?"});
  // Nothing close: the subcommand's help, never a guess of -h.
  auto r = run_cli("score " + model_arg() + " -x");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lstmlm score --help"), std::string::npos) << r.err;
}

TEST(FirstHourCli, AModelDirectoryWithoutDashMSaysWhereItGoes) {
  expect_error("score '" + word_dir() + "'", 2,
               {"'" + word_dir() + "' is a model directory: give it with -m", "lstmlm score -m "},
               kFirstHourText);
  expect_error("predict '" + word_dir() + "' 'the king'", 2, {"is a model directory: give it with -m"});
  expect_error("info '" + word_dir() + "'", 2, {"is a model directory: give it with -m"});
}

TEST(FirstHourCli, VerbosityHelpNamesKenLMsLevels) {
  auto h = run_cli("score --help");
  ASSERT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("KenLM query's -v levels"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("natural log"), std::string::npos) << h.out;
}

TEST(FirstHourCli, OovErrorOnAModelWithUnkSaysWhyItDoesNotApply) {
  // fairytales-word has an unk_token: an unknown word is scored as it, --oov error has nothing to refuse.
  auto plain = run_cli("score " + model_arg(), "the zzqx king\n");
  auto r = run_cli("score " + model_arg() + " --oov error", "the zzqx king\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(r.err.find("lstmlm: note: --oov error does not apply: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unk_token '<unk>'"), std::string::npos) << r.err;
  EXPECT_EQ(plain.err.find("--oov error"), std::string::npos) << plain.err;
  for (const std::string& cmd : {"predict " + model_arg() + " --oov error the",
                                 "generate " + model_arg() + " --oov error -p the -n 2 -s 1"}) {
    auto c = run_cli(cmd);
    EXPECT_EQ(c.status, 0) << cmd << c.err;
    EXPECT_NE(c.err.find("--oov error does not apply"), std::string::npos) << cmd << c.err;
  }
  // A model without unk: no note (the option applies).
  auto ch = run_cli("score " + model_arg("charrnn-space") + " --oov error", "the cat\n");
  EXPECT_EQ(ch.err.find("does not apply"), std::string::npos) << ch.err;
}

// ---- Repeatable options --------------------------------------------------------------------------------

TEST(FirstHourCli, RepeatableOptionsLeaveTheInputFileAfterThem) {
  lstmlm::test::TempDir tmp("first_hour_rescore");
  const std::string nb = (tmp / "nb.txt").string(), ac = (tmp / "ac.txt").string(),
                    lmx = (tmp / "lm2.txt").string();
  write(nb, "u1-1 the king\nu1-2 the queen\n");
  write(ac, "u1-1 -1.5\nu1-2 -0.5\n");
  write(lmx, "u1-1 -3\nu1-2 -4\n");
  const std::string order = "rescore " + model_arg() + " --output-format jsonl '" + nb + "' --scores ac='" +
                            ac + "' --scores ng='" + lmx + "' --weight ac=0.5 --weight ng=0.25";
  auto want = run_cli(order);
  ASSERT_EQ(want.status, 0) << want.err;
  ASSERT_EQ(count_lines(want.out), 3u) << want.out;  // two hypotheses and the summary
  // The n-best file right after each repeatable option: read as the input, not as a second value (stdin
  // is empty: reading it would give no hypothesis).
  for (const std::string& cmd :
       {"rescore " + model_arg() + " --output-format jsonl --scores ac='" + ac + "' --scores ng='" + lmx +
            "' --weight ac=0.5 --weight ng=0.25 '" + nb + "'",
        "rescore " + model_arg() + " --output-format jsonl --weight ac=0.5 --scores ac='" + ac +
            "' --weight ng=0.25 " + "--scores ng='" + lmx + "' '" + nb + "'",
        "rescore " + model_arg() + " --output-format jsonl --scores ac='" + ac + "' --scores ng='" + lmx +
            "' --weight ac=0.5 --weight ng=0.25 -f '" + nb + "'"}) {
    auto r = run_cli(cmd);
    ASSERT_EQ(r.status, 0) << cmd << "\n" << r.err;
    EXPECT_EQ(r.out, want.out) << cmd;
  }
  // predict's -p: one context per occurrence, the positional after it another context.
  auto two = run_cli("predict " + model_arg() + " --top 1 -p 'the king' 'the queen'");
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_NE(two.out.find("> the king\n"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("> the queen\n"), std::string::npos) << two.out;
}

// ---- Errors that say the fix ---------------------------------------------------------------------------

TEST(FirstHourCli, ModelPathErrorsSayTheFix) {
  const std::string cfg = (fs::path(word_dir()) / "config.json").string();
  expect_error("score -m '" + cfg + "'", 1,
               {cfg + ": give the model's directory (" + word_dir() + "), not its config.json"},
               kFirstHourText);
  lstmlm::test::TempDir tmp("first_hour_empty");
  expect_error("score -m '" + tmp.path().string() + "'", 1,
               {tmp.path().string() + ": an empty directory, not a model", "lstmlm-convert SOURCE ",
                "docs/importing.md"},
               kFirstHourText);
  {  // a folder of other files: what a model directory is, not "config.json: cannot open"
    std::ofstream(tmp.path() / "notes.txt") << "not a model\n";
    expect_error("score -m '" + tmp.path().string() + "'", 1,
                 {tmp.path().string() + ": not a model directory: no config.json in it",
                  "lstmlm-convert SOURCE OUTDIR"},
                 kFirstHourText);
  }
  const fs::path ml5 =
      source_dir() / ".." / "shared" / "data" / "ml5-charrnn-tf1-basiclstm" / "models" / "charRNN" / "dubois";
  if (!fs::exists(ml5)) GTEST_SKIP() << ml5 << " not present (../shared/data)";
  expect_error("score -m '" + ml5.string() + "'", 1,
               {"this is an ml5 char-rnn directory", "convert it with `lstmlm-convert "}, kFirstHourText);
}

TEST(FirstHourCli, GzipInputSaysDecompressIt) {
  lstmlm::test::TempDir tmp("first_hour_gz");
  const std::string gz = (tmp / "corpus.txt.gz").string();
  write(gz, std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03+\xc9H", 13));
  for (std::string sub : {"score", "fidelity --precision fp32", "rescore", "predict"})
    expect_error(sub + " " + model_arg() + (sub == "predict" ? " -f '" : " '") + gz + "'", 1,
                 {gz + ": compressed input (gzip): decompress it or pipe it through zcat"});
  // On stdin too, where no file name can be looked at first.
  expect_error("score " + model_arg(), 1, {"-: compressed input (gzip)"},
               std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03+\xc9H", 13));
}

TEST(FirstHourCli, WeightForTheLmPointsToLmWeight) {
  for (std::string w : {"lm=", "lm=0.5"}) {
    auto r = run_cli("rescore " + model_arg() + " --weight " + w, "u1-1 the king\n");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("the LM's own weight is --lm-weight"), std::string::npos) << r.err;
  }
}

// ---- Silent choices made loud ---------------------------------------------------------------------------

TEST(FirstHourCli, InputLengthNoteIsOneShortLine) {
  lstmlm::test::TempDir tmp("first_hour_window");
  for (const char* f : {"config.json", "vocab.json", "weights.safetensors"})
    fs::copy_file(fs::path(word_dir()) / f, tmp / f);
  std::ifstream in(tmp / "config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  c["input_length"] = 6;
  std::ofstream(tmp / "config.json") << c.dump(2);
  auto r = run_cli("score -m '" + tmp.path().string() + "' -v summary", kFirstHourText);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string note = r.err.substr(0, r.err.find('\n'));
  EXPECT_EQ(note.rfind("lstmlm: note: ", 0), 0u) << r.err;
  EXPECT_LE(note.size(), 100u) << note;
  EXPECT_NE(note.find("--pad-to 6"), std::string::npos) << note;
}

TEST(FirstHourCli, SeedIsPrintedOnlyWhenItCanChangeTheText) {
  auto greedy = run_cli("generate " + model_arg() + " -p the -n 5 --temperature 0");
  ASSERT_EQ(greedy.status, 0) << greedy.err;
  EXPECT_EQ(greedy.err.find("seed:"), std::string::npos) << greedy.err;
  auto sampled = run_cli("generate " + model_arg() + " -p the -n 5");
  ASSERT_EQ(sampled.status, 0) << sampled.err;
  EXPECT_NE(sampled.err.find("seed: "), std::string::npos) << sampled.err;
  lstmlm::test::TempDir tmp("first_hour_seed");
  auto bad = run_cli("generate -m '" + (tmp / "nothing").string() + "' -p the -n 5");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err.find("seed:"), std::string::npos) << bad.err;
  EXPECT_EQ(count_lines(bad.err), 1u) << bad.err;
}

// ---- Output a user can read ----------------------------------------------------------------------------

TEST(FirstHourCli, UnitsProbGivesEachWordsProbability) {
  auto base = run_cli("score " + model_arg() + " --output-format jsonl", kFirstHourText);
  auto prob = run_cli("score " + model_arg() + " --output-format jsonl --units prob", kFirstHourText);
  ASSERT_EQ(prob.status, 0) << prob.err;
  std::istringstream a(base.out), b(prob.out);
  std::string la, lb;
  int words = 0;
  while (std::getline(a, la) && std::getline(b, lb)) {
    auto ja = nlohmann::json::parse(la), jb = nlohmann::json::parse(lb);
    EXPECT_EQ(jb["logprob"], ja["logprob"]);  // a line's and the summary's total stay ln
    EXPECT_FALSE(jb.contains("log10prob"));
    if (!ja.contains("words")) continue;
    for (size_t k = 0; k < ja["words"].size(); ++k, ++words) {
      EXPECT_FALSE(jb["words"][k].contains("logprob"));
      EXPECT_NEAR(jb["words"][k]["prob"].get<double>(), std::exp(ja["words"][k]["logprob"].get<double>()),
                  1e-7);
    }
  }
  EXPECT_GT(words, 5);
  auto t = run_cli("score " + model_arg() + " --units prob", "once upon\n");
  EXPECT_EQ(t.out.rfind("once=102 0.000770", 0), 0u) << t.out;  // e^-7.168387
  auto tsv = run_cli("score " + model_arg() + " --units prob --output-format tsv", "once upon\n");
  EXPECT_EQ(tsv.out.substr(0, tsv.out.find('\n')), "file\tline\tposition\ttoken\tid\toov\tprob");
  EXPECT_EQ(run_cli("score " + model_arg() + " --units prob --output-format kenlm", "once\n").status, 2);
}

TEST(FirstHourCli, ContextOnlyTokenIsMarkedInWords) {
  // charrnn-space has no start token: a line's first character is context only.
  auto t = run_cli("score " + model_arg("charrnn-space"), "the cat\n");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_EQ(t.out.rfind("t=2 context\th=4 ", 0), 0u) << t.out;
  // The data formats keep their null.
  auto j = run_cli("score " + model_arg("charrnn-space") + " --output-format jsonl", "the cat\n");
  EXPECT_NE(j.out.find("\"token\": \"t\", \"id\": 2, \"oov\": false, \"logprob\": null"), std::string::npos)
      << j.out;
}

TEST(FirstHourCli, WrappedProseGetsAHintForDocumentContext) {
  const fs::path book =
      source_dir() / ".." / "shared" / "data" / "corpora-french" / "notre-dame-de-paris.txt";
  const fs::path ptb = source_dir() / ".." / "shared" / "data" / "corpora-ptb" / "ptb.valid.txt";
  if (!fs::exists(book) || !fs::exists(ptb)) GTEST_SKIP() << "../shared/data corpora not present";
  auto r = run_cli("score " + model_arg() + " -v summary '" + book.string() + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("lstmlm: hint: the input looks like hard-wrapped prose"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--context document"), std::string::npos) << r.err;
  // Scored as one text: no hint. A sentence-per-line corpus (PTB, 500 lines): no hint.
  auto d = run_cli("score " + model_arg() + " -v summary --context document '" + book.string() + "'");
  EXPECT_EQ(d.err.find("hint"), std::string::npos) << d.err;
  std::ifstream in(ptb);
  std::string head, line;
  for (int i = 0; i < 500 && std::getline(in, line); ++i) head += line + "\n";
  auto p = run_cli("score " + model_arg() + " -v summary", head);
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_EQ(p.err.find("hint"), std::string::npos) << p.err;
  // Short input, wrapped or not: no hint.
  auto s = run_cli("score " + model_arg() + " -v summary", "the king went\nto the wood. The queen\nsat\n");
  EXPECT_EQ(s.err.find("hint"), std::string::npos) << s.err;
}

}  // namespace

namespace {

// ---- Progress ------------------------------------------------------------------------------------------

TEST(FirstHourCli, ProgressLineShowsTheShareOfAFileRead) {
  lstmlm::test::TempDir tmp("first_hour_progress");
  const std::string file = (tmp / "in.txt").string(), nb = (tmp / "nb.txt").string();
  write(file, kFirstHourText);
  write(nb, "u1-1 the king\nu1-2 the queen\n");
  struct Cmd {
    std::string args, name;
  };
  for (const Cmd& c : {Cmd{"score " + model_arg() + " '" + file + "'", "score"},
                       Cmd{"predict " + model_arg() + " -f '" + file + "'", "predict"},
                       Cmd{"fidelity " + model_arg() + " --precision fp32 '" + file + "'", "fidelity"},
                       Cmd{"rescore " + model_arg() + " '" + nb + "'", "rescore"}}) {
    SCOPED_TRACE(c.args);
    auto plain = run_cli(c.args);
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(plain.err.find('\r'), std::string::npos) << plain.err;  // auto: stderr is no terminal here
    auto r = run_cli(c.args + " --progress always");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, plain.out);
    EXPECT_NE(r.err.find("\r" + c.name + ": 100.0% of 0."), std::string::npos) << r.err;
    EXPECT_EQ(run_cli(c.args + " --progress never").err.find('\r'), std::string::npos);
  }
  // stdin redirected from a file has a size too.
  auto in = run_cli("score " + model_arg() + " --progress always", kFirstHourText);
  EXPECT_NE(in.err.find("\rscore: 100.0% of 0."), std::string::npos) << in.err;
}

}  // namespace
