// Reading and writing lattices: TheanoLM's real lattice in Kaldi text and SLF, round trips, gzip, and each
// kind of bad input refused with a one-line message naming the file, the lattice and the line.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <tuple>

#include "lstmlm/error.hpp"
#include "lstmlm/lattice.hpp"
#include "test_util.hpp"

namespace {

namespace lt = lstmlm;
using lstmlm::test::shared_data;

std::string theano(const std::string& f) { return (shared_data() / "theanolm-lattices" / f).string(); }

std::vector<lt::Lattice> read_all(const std::string& path, std::shared_ptr<const lt::SymbolTable> words,
                                  std::optional<lt::LatticeFormat> format = std::nullopt) {
  lt::LatticeReader r(path, {format, std::move(words)});
  std::vector<lt::Lattice> out;
  for (lt::Lattice l; r.next(l);) out.push_back(l);
  return out;
}

// Arcs as comparable tuples, in a canonical order (the two forms list them differently).
using ArcKey = std::tuple<int32_t, int32_t, std::string, std::vector<double>>;
std::vector<ArcKey> arc_keys(const lt::Lattice& l) {
  std::vector<ArcKey> v;
  for (const auto& a : l.arcs) v.emplace_back(a.from, a.to, a.epsilon ? "" : a.word, a.scores);
  std::sort(v.begin(), v.end());
  return v;
}

class TheanoLattice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(theano("lattice.lat"))) GTEST_SKIP() << "../shared/data is absent";
    words = lt::SymbolTable::load(theano("words.txt"));
  }
  std::shared_ptr<const lt::SymbolTable> words;
};

TEST_F(TheanoLattice, KaldiFormAsWritten) {
  auto ls = read_all(theano("lattice.lat"), words);
  ASSERT_EQ(ls.size(), 1u);
  const auto& l = ls[0];
  EXPECT_EQ(l.key, "utterance 123");  // the whole key line, as TheanoLM reads it
  EXPECT_EQ(l.states, 23);
  EXPECT_EQ(l.arcs.size(), 37u);
  EXPECT_EQ(l.start, 0);
  ASSERT_EQ(l.finals.size(), 2u);
  EXPECT_EQ(l.finals[0].state, 21);
  EXPECT_EQ(l.finals[0].scores, (std::vector<double>{13.83, 4651.0}));
  EXPECT_TRUE(l.arcs[0].epsilon);  // "0 1 0 0.0,1432.27,": word 0
  // "3 9 6 51.14,965.47,": but, graph cost then acoustic cost, line 8 of the file.
  EXPECT_EQ(l.arcs[6].word, "but");
  EXPECT_EQ(l.arcs[6].scores, (std::vector<double>{51.14, 965.47}));
  EXPECT_EQ(l.arcs[6].line, 8u);
  EXPECT_EQ(lt::check_lattice(l).size(), 23u);
}

TEST_F(TheanoLattice, SlfIsTheSameLattice) {
  auto ls = read_all(theano("lattice.slf"), nullptr);
  ASSERT_EQ(ls.size(), 1u);
  const auto& s = ls[0];
  EXPECT_EQ(s.format, lt::LatticeFormat::Slf);
  EXPECT_EQ(s.key, "utterance 123");
  // 24 nodes and 39 links as written; the two !EXIT links into node 23 are the Kaldi form's final weights.
  EXPECT_EQ(s.states, 23);
  EXPECT_EQ(s.arcs.size(), 37u);
  EXPECT_EQ(s.score_names, (std::vector<std::string>{"acoustic", "lm"}));
  auto k = lt::convert_lattice(read_all(theano("lattice.lat"), words)[0], lt::LatticeFormat::Slf);
  EXPECT_EQ(arc_keys(s), arc_keys(k));
  ASSERT_EQ(s.finals.size(), 2u);
  EXPECT_EQ(s.finals[1].state, 22);
  EXPECT_EQ(s.finals[1].scores, (std::vector<double>{-4651.0, -13.83}));
  // lmscale and wdpenalty are kept for writing back.
  EXPECT_EQ(s.header, (std::vector<std::pair<std::string, std::string>>{
                          {"V", "1.1"}, {"lmscale", "12.3"}, {"wdpenalty", "0.7"}}));
}

TEST_F(TheanoLattice, KaldiToSlfToKaldiKeepsEveryArc) {
  lt::test::TempDir dir("lattice_rt");
  const auto k = read_all(theano("lattice.lat"), words)[0];
  std::ofstream(dir / "a.slf") << lt::write_slf_lattice(k);
  const auto s = read_all((dir / "a.slf").string(), nullptr);
  ASSERT_EQ(s.size(), 1u);
  std::ofstream(dir / "b.lat") << lt::write_kaldi_lattice(s[0], *words);
  const auto back = read_all((dir / "b.lat").string(), words);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].key, k.key);
  EXPECT_EQ(back[0].states, k.states);
  EXPECT_EQ(arc_keys(back[0]), arc_keys(k));
  ASSERT_EQ(back[0].finals.size(), k.finals.size());
  for (size_t i = 0; i < k.finals.size(); ++i) {
    EXPECT_EQ(back[0].finals[i].state, k.finals[i].state);
    EXPECT_EQ(back[0].finals[i].scores, k.finals[i].scores);
  }
}

TEST_F(TheanoLattice, GzipAndSeveralLatticesInOneArchive) {
  lt::test::TempDir dir("lattice_gz");
  std::ifstream in(theano("lattice.lat"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::string two = text + "\n" + text;  // the file ends without the blank line that ends a lattice
  two.replace(two.rfind("utterance 123"), 13, "second");
  gzFile f = gzopen((dir / "a.lat.gz").c_str(), "wb");
  gzwrite(f, two.data(), unsigned(two.size()));
  gzclose(f);
  const auto ls = read_all((dir / "a.lat.gz").string(), words);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[1].key, "second");
  EXPECT_EQ(ls[1].line, 42u);  // 40 lines, the blank one, then the key
  EXPECT_EQ(arc_keys(ls[0]), arc_keys(ls[1]));
}

// One bad input: its message, which must name the file, the lattice and the line.
struct Hostile {
  const char* name;
  bool slf;
  const char* text;
  const char* message;  // what the error's text must contain after "FILE:"
};

class HostileLattice : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileLattice, RefusedWithItsMessage) {
  const Hostile& h = GetParam();
  lt::test::TempDir dir(std::string("lattice_bad_") + h.name);
  const auto path = (dir / "in").string();
  std::ofstream(path) << h.text;
  {
    std::ofstream w(dir / "words.txt");
    w << "<eps> 0\na 1\nb 2\nc 3\n";
  }
  auto words = lt::SymbolTable::load((dir / "words.txt").string());
  try {
    read_all(path, words, h.slf ? lt::LatticeFormat::Slf : lt::LatticeFormat::Kaldi);
    FAIL() << h.name << ": accepted";
  } catch (const lt::InputError& e) {
    const std::string m = e.message();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(m.rfind(path + ":" + h.message, 0), 0u) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, HostileLattice,
    ::testing::Values(
        Hostile{"cycle", false, "u1\n0 1 1 1,1,\n1 2 2 1,1,\n2 1 3 1,1,\n2\n\n",
                "4: lattice 'u1': a cycle: 1 -> 2 -> 1 (a lattice is acyclic)"},
        Hostile{"unreached", false, "u1\n0 1 1 1,1,\n3 1 2 1,1,\n1\n\n",
                "1: lattice 'u1': state 2 is never reached from the start state 0 (no arc uses it)"},
        Hostile{"not_coaccessible", false, "u1\n0 1 1 1,1,\n0 2 2 1,1,\n1\n\n",
                "3: lattice 'u1': state 2 reaches no final state (not all states are co-accessible)"},
        Hostile{"id_past_table", false, "u1\n0 1 57 1,1,\n1\n\n", "2: lattice 'u1': word id 57 is not in"},
        Hostile{"nan_cost", false, "u1\n0 1 1 nan,1,\n1\n\n",
                "2: lattice 'u1': graph cost 'nan' is not a finite number"},
        Hostile{"no_final", false, "u1\n0 1 1 1,1,\n\n", "1: lattice 'u1': no final state"},
        Hostile{"huge_state", false, "u1\n0 99999999 1 1,1,\n\n",
                "2: lattice 'u1': state '99999999' is not a state number in [0, 2097152)"},
        Hostile{"bad_line", false, "u1\n0 1 1 2 3 4 5\n\n", "2: lattice 'u1': expected an arc"},
        Hostile{"slf_too_few_links", true, "UTTERANCE=u1\nN=2 L=2\nI=0\nI=1\nJ=0 S=0 E=1 W=a\n",
                "2: lattice 'u1': N=2 L=2 but the file ends after 2 node and 1 link lines"},
        Hostile{"slf_too_many_links", true,
                "UTTERANCE=u1\nN=2 L=1\nI=0\nI=1\nJ=0 S=0 E=1 W=a\nJ=1 S=0 E=1 W=b\n",
                "6: a node or link line where a lattice's header starts"},
        Hostile{"slf_link_past_L", true, "UTTERANCE=u1\nN=2 L=1\nI=0\nI=1\nJ=1 S=0 E=1 W=a\n",
                "5: lattice 'u1': link J=1 is past L=1"},
        Hostile{"slf_node_past_N", true, "UTTERANCE=u1\nN=2 L=1\nI=0\nI=1\nJ=0 S=0 E=2 W=a\n",
                "5: lattice 'u1': link J=0: E=2 is past N=2"},
        Hostile{"slf_nan", true, "UTTERANCE=u1\nN=2 L=1\nI=0\nI=1\nJ=0 S=0 E=1 W=a a=nan\n",
                "5: lattice 'u1': a=nan is not a finite number"},
        Hostile{
            "slf_cycle", true,
            "UTTERANCE=u1 end=2\nN=3 L=3\nI=0\nI=1\nI=2\nJ=0 S=0 E=1 W=a\nJ=1 S=1 E=2 W=b\nJ=2 S=2 E=1 W=c\n",
            "8: lattice 'u1': a cycle: 1 -> 2 -> 1 (a lattice is acyclic)"},
        Hostile{"slf_end_past_N", true, "UTTERANCE=u1 end=7\nN=2 L=1\nI=0\nI=1\nJ=0 S=0 E=1 W=a\n",
                "1: lattice 'u1': end=7 is past N=2"},
        Hostile{"slf_two_ends", true,
                "UTTERANCE=u1\nN=3 L=2\nI=0\nI=1\nI=2\nJ=0 S=0 E=1 W=a\nJ=1 S=0 E=2 W=b\n",
                "1: lattice 'u1': nodes 1 and 2 both have no leaving link: give end= in the header"},
        Hostile{"slf_quote", true, "UTTERANCE=\"u1\nN=1 L=0\nI=0\n",
                "1: the value of U= has no closing quote"}),
    [](const ::testing::TestParamInfo<Hostile>& i) { return std::string(i.param.name); });

TEST(LatticeBounds, MoreArcsThanTheBoundAreRefused) {
  lt::test::TempDir dir("lattice_bound");
  std::ofstream(dir / "words.txt") << "<eps> 0\na 1\n";
  std::ofstream(dir / "a.lat") << "u1\n0 1 1\n1 2 1\n2 3 1\n3 4 1\n4 5 1\n5\n\n";
  std::ofstream(dir / "a.slf") << "UTTERANCE=u1\nN=2 L=5\n";
  lt::LatticeReadOptions o{lt::LatticeFormat::Kaldi, lt::SymbolTable::load((dir / "words.txt").string()), 4};
  try {
    lt::LatticeReader r((dir / "a.lat").string(), o);
    lt::Lattice l;
    r.next(l);
    FAIL() << "accepted";
  } catch (const lt::InputError& e) {
    EXPECT_EQ(e.message(),
              (dir / "a.lat").string() +
                  ":6: lattice 'u1': more than 4 arcs in one lattice (the bound of one lattice's memory)");
  }
  o.format = lt::LatticeFormat::Slf;
  try {
    lt::LatticeReader r((dir / "a.slf").string(), o);
    lt::Lattice l;
    r.next(l);
    FAIL() << "accepted";
  } catch (const lt::InputError& e) {
    EXPECT_EQ(
        e.message(),
        (dir / "a.slf").string() +
            ":2: lattice 'u1': L=5: more than 4 links in one lattice (the bound of one lattice's memory)");
  }
}

TEST(LatticeSlf, QuotesEscapesBaseAndWordsOnNodes) {
  lt::test::TempDir dir("lattice_slf");
  const auto path = (dir / "a.slf").string();
  // base=10: l=-2 is ln(10^-2); the word of node 1 goes to the link entering it; a quoted word with a space
  // and an escaped quote.
  std::ofstream(path) << "# comment\nVERSION=1.0\nUTTERANCE='say \\'hi\\''\nbase=10\nN=3 L=2\n"
                      << "I=0 t=0\nI=1 t=0.5 W=\"new york\"\nI=2 t=1.0 W=!NULL\n"
                      << "J=0 S=0 E=1 a=-10 l=-2\nJ=1 S=1 E=2 W=\"a\\\"b\" l=0\n";
  const auto ls = read_all(path, nullptr);
  ASSERT_EQ(ls.size(), 1u);
  const auto& l = ls[0];
  EXPECT_EQ(l.key, "say 'hi'");
  EXPECT_EQ(l.arcs[0].word, "new york");
  EXPECT_DOUBLE_EQ(l.arcs[0].scores[1], -2 * std::log(10.0));
  EXPECT_DOUBLE_EQ(l.arcs[0].scores[0], -10 * std::log(10.0));
  EXPECT_EQ(l.arcs[1].word, "a\"b");
  EXPECT_EQ(l.times, (std::vector<double>{0, 0.5, 1.0}));
  ASSERT_EQ(l.finals.size(), 1u);
  EXPECT_EQ(l.finals[0].state, 2);
}

}  // namespace
