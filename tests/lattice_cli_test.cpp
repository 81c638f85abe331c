// `lstmlm rescore` on lattices: SRILM's list for the TheanoLM lattice through the CLI in both forms, the
// numbers of each path equal to `rescore` of the path as an n-best entry, lattices written and read back,
// OpenFst's shortest path of the written lattice equal to --best, and bad input refused in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "lstmlm/lattice.hpp"
#include "test_util.hpp"

namespace {

using lstmlm::test::run_cli;

std::string theanolm_path(const std::string& f) {
  return (lstmlm::test::shared_data() / "theanolm-lattices" / f).string();
}
std::string quoted_path(const std::string& p) { return "'" + p + "'"; }

// SOURCE.md: lattice-tool's 12-best of the lattice, best first.
const std::vector<std::string> kLatticeToolOrder = {
    "it didn't elaborate",    "but it didn't elaborate", "the didn't elaborate",   "and it didn't elaborate",
    "e. didn't elaborate",    "in it didn't elaborate",  "a didn't elaborate",     "at it didn't elaborate",
    "it it didn't elaborate", "to it didn't elaborate",  "a. it didn't elaborate", "a it didn't elaborate"};

// The values of one column of a tsv output.
std::vector<std::string> tsv_column(const std::string& out, const std::string& name) {
  auto lines = lstmlm::test::split_lines(out);
  std::vector<std::string> header;
  std::vector<std::string> col;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> cells;
    std::stringstream ss(lines[i]);
    for (std::string c; std::getline(ss, c, '\t');) cells.push_back(c);
    if (i == 0) {
      header = cells;
      continue;
    }
    for (size_t k = 0; k < header.size() && k < cells.size(); ++k)
      if (header[k] == name) col.push_back(cells[k]);
  }
  return col;
}

class LatticeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(theanolm_path("lattice.lat"))) GTEST_SKIP() << "../shared/data is absent";
    words = " --words " + quoted_path(theanolm_path("words.txt"));
  }
  std::string words;
};

TEST_F(LatticeCli, LatticeToolsListFromBothForms) {
  const std::string common = "rescore " + lstmlm::test::model_arg() +
                             " --lm-weight 0 --word-penalty 0.7 --n-best 100 --output-format tsv ";
  auto k = run_cli(common + quoted_path(theanolm_path("lattice.lat")) + words +
                   " --weight acoustic=-1 --weight graph=-12.3");
  ASSERT_EQ(k.status, 0) << k.err;
  EXPECT_EQ(tsv_column(k.out, "hyp"), kLatticeToolOrder);
  // The SLF form, its format found from its content.
  auto s =
      run_cli(common + quoted_path(theanolm_path("lattice.slf")) + " --weight acoustic=1 --weight lm=12.3");
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(tsv_column(s.out, "hyp"), kLatticeToolOrder);
  EXPECT_EQ(tsv_column(s.out, "combined"), tsv_column(k.out, "combined"));
}

TEST_F(LatticeCli, EachPathScoresAsRescoreScoresItsHypothesis) {
  auto l = run_cli(
      "rescore " + lstmlm::test::model_arg() + " " + quoted_path(theanolm_path("lattice.lat")) + words +
      " --weight acoustic=-0.1 --weight graph=-1 --word-penalty 0.5 --n-best 12 --output-format tsv");
  ASSERT_EQ(l.status, 0) << l.err;
  const auto hyp = tsv_column(l.out, "hyp"), graph = tsv_column(l.out, "graph"),
             acoustic = tsv_column(l.out, "acoustic");
  ASSERT_EQ(hyp.size(), 12u);
  std::string nbest = "utt\thyp\tgraph\tacoustic\n";
  for (size_t i = 0; i < hyp.size(); ++i)
    nbest += "u\t" + hyp[i] + "\t" + graph[i] + "\t" + acoustic[i] + "\n";
  auto r = run_cli("rescore " + lstmlm::test::model_arg() +
                       " --input-format tsv --weight acoustic=-0.1 --weight graph=-1 --word-penalty 0.5 "
                       "--output-format tsv",
                   nbest);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(tsv_column(r.out, "lm_logprob"), tsv_column(l.out, "lm_logprob"));
  EXPECT_EQ(tsv_column(r.out, "combined"), tsv_column(l.out, "combined"));
  EXPECT_EQ(tsv_column(r.out, "tokens"), tsv_column(l.out, "tokens"));
  // The list's best is the lattice's 1-best.
  const auto best = tsv_column(r.out, "best");
  EXPECT_EQ(best[0], "1");
}

TEST_F(LatticeCli, WrittenLatticesReadBack) {
  lstmlm::test::TempDir dir("lattice_cli");
  // Order 1 merges every history at a node: the rescored lattice has the input's shape.
  const std::string base = "rescore " + lstmlm::test::model_arg() + words + " --max-ngram-order 1 ";
  auto slf = run_cli(base + "--weight acoustic=-0.1 --weight graph=-1 --output-format slf " +
                     quoted_path(theanolm_path("lattice.lat")));
  ASSERT_EQ(slf.status, 0) << slf.err;
  std::ofstream(dir / "out.slf") << slf.out;
  auto kaldi = run_cli(base + "--weight acoustic=0.1 --weight lm=1 --output-format kaldi-lattice " +
                       quoted_path((dir / "out.slf").string()));
  ASSERT_EQ(kaldi.status, 0) << kaldi.err;
  std::ofstream(dir / "out.lat") << kaldi.out;
  auto table = lstmlm::SymbolTable::load(theanolm_path("words.txt"));
  auto read = [&](const std::string& p) {
    lstmlm::LatticeReader r(p, {std::nullopt, table});
    lstmlm::Lattice l;
    EXPECT_TRUE(r.next(l));
    return l;
  };
  const auto in = read(theanolm_path("lattice.lat")), out = read((dir / "out.lat").string());
  EXPECT_EQ(out.key, in.key);
  EXPECT_EQ(out.states, in.states);
  // Every arc is there with its word and its acoustic cost (the graph cost is the new LM's).
  std::multiset<std::pair<std::string, double>> want, got;
  for (const auto& a : in.arcs) want.insert({a.word, a.scores[1]});
  for (const auto& a : out.arcs) got.insert({a.word, a.scores[1]});
  EXPECT_EQ(got, want);
  EXPECT_EQ(out.finals.size(), in.finals.size());
}

// A random word lattice in Kaldi text over some of the bundled model's words, with words.txt.
void random_kaldi(std::mt19937_64& rng, const std::string& dir, int lattices) {
  const std::vector<std::string> vocab = {"the",  "king", "a",    "queen", "was",
                                          "once", "upon", "time", "there"};
  std::ofstream w(dir + "/words.txt");
  w << "<eps> 0\n";
  for (size_t i = 0; i < vocab.size(); ++i) w << vocab[i] << " " << i + 1 << "\n";
  std::ofstream l(dir + "/in.lat");
  for (int k = 0; k < lattices; ++k) {
    const int states = 5 + int(rng() % 8);
    l << "lat" << k << "\n";
    auto arc = [&](int a, int b) {
      l << a << " " << b << " " << rng() % (vocab.size() + 1) << " " << double(rng() % 1000) / 100 << ","
        << double(rng() % 10000) / 10 << ",\n";
    };
    for (int s = 0; s + 1 < states; ++s) arc(s, s + 1);
    for (int e = 0; e < 2 * states; ++e) {
      const int a = int(rng() % uint64_t(states - 1));
      arc(a, a + 1 + int(rng() % uint64_t(std::min(3, states - 1 - a))));
    }
    l << states - 1 << " 0.5,1.5,\n" << states - 2 << "\n\n";
  }
}

// OpenFst (Debian libfst-tools) as an independent oracle: the shortest path of the rescored lattice, with
// the costs lattice-best-path --acoustic-scale=0.1 uses, is the path --best gives.
TEST(LatticeCliOracle, OpenFstShortestPathOfTheWrittenLatticeIsTheBest) {
  if (std::system("command -v fstshortestpath >/dev/null 2>&1") != 0) GTEST_SKIP() << "no OpenFst tools";
  lstmlm::test::TempDir dir("lattice_fst");
  std::mt19937_64 rng(2024);
  random_kaldi(rng, dir.path().string(), 8);
  const std::string base = "rescore " + lstmlm::test::model_arg() + " --words " +
                           quoted_path((dir / "words.txt").string()) + " " +
                           quoted_path((dir / "in.lat").string()) +
                           " --weight acoustic=-0.1 --weight graph=-1 --word-penalty 0.3 ";
  auto best = run_cli(base + "--best");
  ASSERT_EQ(best.status, 0) << best.err;
  auto lat = run_cli(base + "--output-format kaldi-lattice");
  ASSERT_EQ(lat.status, 0) << lat.err;
  auto table = lstmlm::SymbolTable::load((dir / "words.txt").string());
  std::ofstream(dir / "out.lat") << lat.out;
  lstmlm::LatticeReader r((dir / "out.lat").string(), {std::nullopt, table});
  std::vector<std::string> got;
  for (lstmlm::Lattice l; r.next(l);) {
    // The acceptor of word ids with cost graph + 0.1 acoustic, then OpenFst's shortest path.
    std::ostringstream fst;
    fst.precision(17);
    for (const auto& a : l.arcs) {
      const int64_t id = a.epsilon ? 0 : *table->id(a.word);
      fst << a.from << " " << a.to << " " << id << " " << a.scores[0] + 0.1 * a.scores[1] << "\n";
    }
    for (const auto& f : l.finals) fst << f.state << " " << f.scores[0] + 0.1 * f.scores[1] << "\n";
    std::ofstream((dir / "l.txt").string()) << fst.str();
    const std::string cmd = "fstcompile --acceptor " + quoted_path((dir / "l.txt").string()) +
                            " | fstshortestpath | fsttopsort | fstprint --acceptor > " +
                            quoted_path((dir / "p.txt").string());
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream p(dir / "p.txt");
    std::string text = l.key;
    for (std::string line; std::getline(p, line);) {
      std::istringstream f(line);
      int64_t a = 0, b = 0, label = -1;
      if (f >> a >> b >> label && label > 0) text += " " + *table->word(label);
    }
    got.push_back(text);
  }
  EXPECT_EQ(got, lstmlm::test::split_lines(best.out));
}

// stdin cannot be read twice to tell its form: named, a lattice reads from it as from its file.
TEST_F(LatticeCli, StdinWithTheFormNamed) {
  std::ifstream in(theanolm_path("lattice.slf"));
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::string args =
      "rescore " + lstmlm::test::model_arg() + " --weight acoustic=0.1 --weight lm=1 --n-best 3";
  auto piped = run_cli(args + " --input-format slf", text);
  ASSERT_EQ(piped.status, 0) << piped.err;
  auto file = run_cli(args + " " + quoted_path(theanolm_path("lattice.slf")));
  ASSERT_EQ(file.status, 0) << file.err;
  EXPECT_EQ(piped.out, file.out);
  EXPECT_EQ(lstmlm::test::count_lines(file.out), 3u);
}

TEST_F(LatticeCli, BadLatticesAreOneLineErrors) {
  lstmlm::test::TempDir dir("lattice_cli_bad");
  const auto cyclic = (dir / "cyclic.lat").string();
  std::ofstream(cyclic) << "u1\n0 1 11 1,1,\n1 2 7 1,1,\n2 1 9 1,1,\n2\n\n";
  auto r = run_cli("rescore " + lstmlm::test::model_arg() + words + " --input-format kaldi-lattice " +
                   quoted_path(cyclic));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            "lstmlm: error: " + cyclic + ":4: lattice 'u1': a cycle: 1 -> 2 -> 1 (a lattice is acyclic)\n");
  // Lattice options on an n-best list, and a Kaldi lattice without its symbol table, are usage errors.
  auto nb = run_cli("rescore " + lstmlm::test::model_arg() + " --n-best 3", "u1-1 the king\n");
  EXPECT_EQ(nb.status, 2);
  EXPECT_EQ(nb.err, "lstmlm: error: --n-best: for lattice input (an n-best list is rescored whole)\n");
  auto out = run_cli("rescore " + lstmlm::test::model_arg() + " --output-format slf", "u1-1 the king\n");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.err.find("needs lattice input"), std::string::npos) << out.err;
  auto u = run_cli("rescore " + lstmlm::test::model_arg() + " " + quoted_path(theanolm_path("lattice.lat")));
  EXPECT_EQ(u.status, 2);
  EXPECT_NE(u.err.find("--words"), std::string::npos) << u.err;
}

}  // namespace
