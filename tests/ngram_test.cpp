// NgramModel against KenLM's own expectations on its test.arpa (../shared/data/kenlm-test-arpa: the scores
// and n-gram lengths of KenLM's lm/model_test.cc, listed in its SOURCE.md), and the ARPA reader's refusals.
#include "lstmlm/ngram.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "lstmlm/error.hpp"
#include "test_util.hpp"

namespace lstmlm {
namespace {

std::string kenlm_arpa(const char* name = "test.arpa") {
  return (test::shared_data() / "kenlm-test-arpa" / name).string();
}

struct KenlmRow {
  const char* word;
  int length;
  double log10prob;
};

// Scores `rows` in sequence from `start`, each word after the ones before it.
void expect_kenlm_rows(const NgramModel& m, NgramState state, const std::vector<KenlmRow>& rows) {
  for (const KenlmRow& r : rows) {
    const NgramScore s = m.score(state, m.index(r.word), state);
    EXPECT_NEAR(s.log10prob, r.log10prob, 1e-6) << r.word;
    EXPECT_EQ(s.length, r.length) << r.word;
  }
}

class KenlmTable : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kenlm_arpa())) GTEST_SKIP() << "no ../shared/data/kenlm-test-arpa";
    model = NgramModel::load(kenlm_arpa());
  }
  std::shared_ptr<const NgramModel> model;
};

TEST_F(KenlmTable, CountsAndSpecialWords) {
  EXPECT_EQ(model->order(), 5);
  EXPECT_EQ(model->counts(), (std::vector<uint64_t>{37, 47, 11, 6, 4}));
  EXPECT_EQ(model->vocab_size(), 37u);
  EXPECT_FALSE(model->unk_added());
  EXPECT_EQ(model->word(model->bos()), "<s>");
  EXPECT_EQ(model->word(model->eos()), "</s>");
  EXPECT_EQ(model->index("this_is_not_found"), model->unk());
}

TEST_F(KenlmTable, SentenceStart) {
  const NgramModel& m = *model;
  expect_kenlm_rows(m, m.begin_sentence(), {{"looking", 2, -0.4846522}});
  expect_kenlm_rows(m, m.begin_sentence(), {{",", 1, -1.383514 + -0.4149733}});
  expect_kenlm_rows(m, m.begin_sentence(), {{"this_is_not_found", 1, -1.995635 + -0.4149733}});
  expect_kenlm_rows(
      m, m.begin_sentence(),
      {{"looking", 2, -0.4846522},
       {"on", 3, -0.348837},
       {"a", 4, -0.0155266},
       {"little", 5, -0.00306122},
       // KenLM's test writes the next four rounded (-4.04005, -1.9889, -2.29666, -1.20632 - 20); here
       // each is the sum of the file's own values, within KenLM's 0.001% of its literal:
       // p(the) + bo(little) + bo(a little) + bo(on a little) + bo(looking on a little)
       {"the", 1, -1.687872 - 0.69897 - 0.69897 - 0.4771212 - 0.4771212},
       {"biarritz", 1, -1.687872 - 0.30103},   // p(biarritz) + bo(the)
       {"not_found", 1, -1.995635 - 0.30103},  // p(<unk>) + bo(biarritz)
       {"more", 1, -1.206319 - 20.0},          // p(more) + bo(<unk>)
       {".", 2, -0.51363},
       {"</s>", 3, -0.0191651}});
  expect_kenlm_rows(m, m.begin_sentence(),
                    {{"looking", 2, -0.4846522},
                     {"on", 3, -0.348837},
                     {"a", 4, -0.0155266},
                     {"little", 5, -0.00306122},
                     {"more", 5, -0.00181395},
                     {"loin", 5, -0.0432557}});
}

TEST_F(KenlmTable, NullContextAndBlanks) {
  const NgramModel& m = *model;
  const NgramState null = m.null_context();
  expect_kenlm_rows(
      m, null,
      {{"also", 1, -1.687872}, {"would", 2, -2}, {"consider", 3, -3}, {"higher", 4, -4}, {"looking", 5, -5}});
  expect_kenlm_rows(m, null,
                    {{"also", 1, -1.687872},
                     {"would", 2, -2},
                     {"consider", 3, -3},
                     {"not_found", 1, -1.995635 - 7.0 - 0.30103}});
  expect_kenlm_rows(m, null,
                    {{"higher", 1, -1.509559},
                     {"looking", 2, -1.285941 - 0.30103},
                     {"not_found", 1, -1.995635 - 0.4771212}});
  expect_kenlm_rows(m, null,
                    {{"higher", 1, -1.509559},
                     {"looking", 2, -1.285941 - 0.30103},
                     {"consider", 1, -1.687872 - 0.4771212}});
  expect_kenlm_rows(m, null,
                    {{"would", 1, -1.687872},
                     {"consider", 2, -1.687872 - 0.30103},
                     {"higher", 3, -1.509559 - 0.30103},
                     {"looking", 4, -1.285941 - 0.30103}});
  expect_kenlm_rows(m, null,
                    {{"not_found", 1, -1.995635}, {"not_found2", 2, -15.0}, {"not_found3", 2, -15.0 - 2.0}});
  expect_kenlm_rows(m, null, {{"not_found", 1, -1.995635}, {"however", 2, -4}, {"not_found3", 3, -6}});
  expect_kenlm_rows(m, null, {{"baz", 1, -6.535897}});
  expect_kenlm_rows(m, null, {{"foo", 1, -3.141592}, {"bar", 2, -6.0}, {"bar", 1, -2.718281 + 3.0}});
  expect_kenlm_rows(m, null, {{"to", 1, -1.687872}, {"look", 2, -0.2922095}, {"a", 3, -7}});
}

// Without <unk> in the file, KenLM adds it with log10 p = -100.
TEST(NgramModel, MissingUnkIsAddedAsKenlmDoes) {
  if (!std::filesystem::exists(kenlm_arpa("test_nounk.arpa")))
    GTEST_SKIP() << "no ../shared/data/kenlm-test-arpa";
  auto m = NgramModel::load(kenlm_arpa("test_nounk.arpa"));
  EXPECT_TRUE(m->unk_added());
  NgramState s = m->null_context();
  EXPECT_NEAR(m->score(s, m->index("not_found")).log10prob, -100.0, 1e-6);
}

// The same file gzip-compressed gives the same model.
TEST(NgramModel, GzipIsReadAsPlainText) {
  test::TempDir dir("ngram_gz");
  const std::string text =
      "\\data\\\nngram 1=4\nngram "
      "2=1\n\n\\1-grams:\n-1\t<s>\t-0.5\n-0.5\t</s>\n-1.5\t<unk>\n-0.25\tword\t-0.1\n\n"
      "\\2-grams:\n-0.125\t<s> word\n\n\\end\\\n";
  const std::string gz = (dir / "m.arpa.gz").string();
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(f);
  EXPECT_TRUE(NgramModel::is_arpa(gz));
  auto m = NgramModel::load(gz);
  const NgramScore s = m->score(m->begin_sentence(), m->index("word"));
  EXPECT_NEAR(s.log10prob, -0.125, 1e-7);
  EXPECT_EQ(s.length, 2);
  // p(</s> | word) backs off: -0.5 + word's back-off -0.1.
  NgramState st;
  m->score(m->begin_sentence(), m->index("word"), st);
  EXPECT_NEAR(m->score(st, m->eos()).log10prob, -0.6, 1e-6);
}

// Each malformed file: a ModelError naming the file and the line.
TEST(NgramModel, MalformedFilesAreRefusedWithFileAndLine) {
  using namespace std::literals;
  test::TempDir dir("ngram_bad");
  const std::string good_unigrams = "-1\t<s>\t-0.5\n-0.5\t</s>\n-1.5\t<unk>\n-0.25\ta\t-0.1\n";
  struct ArpaCase {
    std::string text, expect;
  };
  const std::vector<ArpaCase> cases = {
      {"hello\n", "line 1: expected \\data\\"},
      {"\\data\\\nngram 1=5\n\n\\1-grams:\n" + good_unigrams + "\n\\end\\\n",
       "has 4 n-grams, \\data\\ lists 5"},
      {"\\data\\\nngram 1=3\n\n\\1-grams:\n" + good_unigrams + "\n\\end\\\n",
       "line 8: more 1-grams than the 3"},
      {"\\data\\\nngram 1=4\nngram 2=1\n\n\\1-grams:\n" + good_unigrams + "\n\\end\\\n",
       "expected \\2-grams:"},
      {"\\data\\\nngram 1=4\n\n\\1-grams:\n-x\t<s>\n-0.5\t</s>\n-1.5\t<unk>\n-1\ta\n\n\\end\\\n",
       "line 5: the log10 probability '-x' is not a number"},
      {"\\data\\\nngram 1=4\n\n\\1-grams:\nnan\t<s>\n-0.5\t</s>\n-1.5\t<unk>\n-1\ta\n\n\\end\\\n",
       "line 5: the log10 probability 'nan' is not finite"},
      {"\\data\\\nngram 1=4\n\n\\1-grams:\n-1\t<s>\tinf\n-0.5\t</s>\n-1.5\t<unk>\n-1\ta\n\n\\end\\\n",
       "line 5: the back-off 'inf' is not finite"},
      {"\\data\\\nngram 1=4\n\n\\1-grams:\n-1e39\t<s>\n-0.5\t</s>\n-1.5\t<unk>\n-1\ta\n\n\\end\\\n",
       "line 5: the log10 probability '-1e39' is out of range"},
      {"\\data\\\nngram 1=4\n\n\\1-grams:\n0.5\t<s>\n-0.5\t</s>\n-1.5\t<unk>\n-1\ta\n\n\\end\\\n",
       "is positive"},
      {"\\data\\\nngram 1=4\n\n\\1-grams:\n-1\t<s>\n-0.5\t</s>\n-1.5\t<unk>\n-1\t<s>\n\n\\end\\\n",
       "line 8: the unigram '<s>' appears twice"},
      {"\\data\\\nngram 1=4\nngram 2=2\n\n\\1-grams:\n" + good_unigrams +
           "\n\\2-grams:\n-0.1\t<s> a\n-0.2\t<s> a\n\n\\end\\\n",
       "line 13: the 2-gram '<s> a' appears twice"},
      {"\\data\\\nngram 1=4\nngram 2=1\n\n\\1-grams:\n" + good_unigrams +
           "\n\\2-grams:\n-0.1\t<s> zebra\n\n\\end\\\n",
       "line 12: 'zebra' is not among the unigrams"},
      {"\\data\\\nngram 1=4\n\n\\1-grams:\n" + good_unigrams + "\n", "no \\end\\"},
      {"\\data\\\nngram 1=3\n\n\\1-grams:\n-1\t<s>\n-1.5\t<unk>\n-1\ta\n\n\\end\\\n",
       "no </s> among the unigrams"},
      {"\\data\\\nngram 2=3\n", "line 2: 'ngram 2=' where 'ngram 1=' was expected"},
      {"\\data\\\nngram 1=4\n\n\\1-grams:\n-1\t<s> x y\n-0.5\t</s>\n-1.5\t<unk>\n-1\ta\n\n\\end\\\n",
       "line 5: an 1-gram line is"},
      // A NUL byte inside a line (a string_view literal keeps it).
      {std::string(
           "\\data\\\nngram 1=4\n\n\\1-grams:\n-1\t<s\0>\n-0.5\t</s>\n-1.5\t<unk>\n-1\ta\n\n\\end\\\n"sv),
       "line 5: a NUL byte"},
  };
  int i = 0;
  for (const ArpaCase& c : cases) {
    const std::string path = (dir / ("bad" + std::to_string(i++) + ".arpa")).string();
    std::ofstream(path, std::ios::binary) << c.text;
    try {
      NgramModel::load(path);
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const ModelError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_NE(e.message().find(c.expect), std::string::npos) << e.what() << "\nexpected: " << c.expect;
    }
  }
  // A gzip file cut short is a read error, not a short model.
  const std::string gz = (dir / "cut.arpa.gz").string();
  {
    gzFile f = gzopen(gz.c_str(), "wb");
    std::string text = "\\data\\\nngram 1=4\n\n\\1-grams:\n" + good_unigrams + "\n\\end\\\n";
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  }
  std::ifstream in(gz, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(gz, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 12);
  EXPECT_THROW(NgramModel::load(gz), ModelError);
  EXPECT_THROW(NgramModel::load(dir.path().string()), ModelError);
}

}  // namespace
}  // namespace lstmlm
