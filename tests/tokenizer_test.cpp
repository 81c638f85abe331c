// Tokenizer: Keras-style filters and lowercasing, Python str.split() whitespace, char models, OOV, UTF-8.
// Expected lowercase strings were produced by Python 3.11's str.lower() (what Keras' Tokenizer calls).
#include "lstmlm/tokenizer.hpp"

#include <gtest/gtest.h>

#include "lstmlm/error.hpp"
#include "model/unicode.hpp"

namespace {

using lstmlm::InputError;
using lstmlm::Token;
using lstmlm::Tokenizer;
using lstmlm::TokenizerConfig;
using lstmlm::TokenizerType;
using lstmlm::Vocab;

// Keras' default Tokenizer filters.
const char* kKerasFilters = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n";

std::vector<std::string> texts(const std::vector<Token>& ts) {
  std::vector<std::string> out;
  for (const auto& t : ts) out.push_back(t.text);
  return out;
}
std::vector<int32_t> ids(const std::vector<Token>& ts) {
  std::vector<int32_t> out;
  for (const auto& t : ts) out.push_back(t.id);
  return out;
}

std::string lower(const std::string& s) {
  auto d = lstmlm::model::decode_utf8(s, nullptr);
  return lstmlm::model::encode_utf8(lstmlm::model::lowercase(*d));
}

TEST(Tokenizer, WordKerasFiltersAndLowercase) {
  Vocab v({"<unk>", "hello", "world", "it's"});
  TokenizerConfig c;
  c.lowercase = true;
  c.filters = kKerasFilters;
  c.unk_token = "<unk>";
  auto tok_ptr = Tokenizer::create(c, v);
  const Tokenizer& tok = *tok_ptr;
  // ',' and '!' become spaces; the apostrophe is not a Keras filter, so "it's" stays one word.
  auto ts = tok.tokenize("Hello, World!  It's\tNEW");
  EXPECT_EQ(texts(ts), (std::vector<std::string>{"hello", "world", "it's", "new"}));
  EXPECT_EQ(ids(ts), (std::vector<int32_t>{1, 2, 3, 0}));
  EXPECT_FALSE(ts[0].oov);
  EXPECT_TRUE(ts[3].oov);
}

TEST(Tokenizer, FilteredCharacterSeparatesWords) {
  // Keras replaces a filtered character by the split character: "a.b" is two words, not "ab".
  Vocab v({"a", "b"});
  TokenizerConfig c;
  c.filters = ".";
  auto tok_ptr = Tokenizer::create(c, v);
  const Tokenizer& tok = *tok_ptr;
  EXPECT_EQ(ids(tok.tokenize("a.b")), (std::vector<int32_t>{0, 1}));
}

TEST(Tokenizer, MultibyteFilters) {
  Vocab v({"bonjour"});
  TokenizerConfig c;
  c.filters = "«»";
  auto tok_ptr = Tokenizer::create(c, v);
  const Tokenizer& tok = *tok_ptr;
  EXPECT_EQ(texts(tok.tokenize("«bonjour»")), (std::vector<std::string>{"bonjour"}));
}

TEST(Tokenizer, SplitsOnPythonWhitespace) {
  // NBSP (U+00A0), ideographic space (U+3000), vertical tab and CR all split, as in Python's str.split().
  Vocab v({"a", "b", "c", "d", "e"});
  auto tok_ptr = Tokenizer::create(TokenizerConfig{}, v);
  const Tokenizer& tok = *tok_ptr;
  EXPECT_EQ(ids(tok.tokenize("  a\xC2\xA0"
                             "b\xE3\x80\x80"
                             "c\vd\re  ")),
            (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(tok.tokenize("   \t ").empty());
  EXPECT_TRUE(tok.tokenize("").empty());
}

TEST(Tokenizer, CaseKeptWithoutLowercase) {
  Vocab v({"The", "the"});
  auto tok_ptr = Tokenizer::create(TokenizerConfig{}, v);
  const Tokenizer& tok = *tok_ptr;
  EXPECT_EQ(ids(tok.tokenize("The the")), (std::vector<int32_t>{0, 1}));
}

TEST(Tokenizer, OovWithoutUnkIsMinusOne) {
  Vocab v({"a"});
  auto tok_ptr = Tokenizer::create(TokenizerConfig{}, v);
  const Tokenizer& tok = *tok_ptr;
  auto ts = tok.tokenize("a zzz");
  EXPECT_EQ(ids(ts), (std::vector<int32_t>{0, -1}));
  EXPECT_TRUE(ts[1].oov);
  EXPECT_EQ(ts[1].text, "zzz");
}

TEST(Tokenizer, CharModelCodePointsFiltersAndSpaces) {
  Vocab v({"a", "b", " ", "é", "<unk>"});
  TokenizerConfig c;
  c.type = TokenizerType::Char;
  c.lowercase = true;
  c.filters = "c";
  c.unk_token = "<unk>";
  auto tok_ptr = Tokenizer::create(c, v);
  const Tokenizer& tok = *tok_ptr;
  // 'C' lowercases to 'c', which the filters delete; 'É' is two bytes but one token; 'x' is unk.
  auto ts = tok.tokenize("Ab Cx\xC3\x89");
  EXPECT_EQ(texts(ts), (std::vector<std::string>{"a", "b", " ", "x", "\xC3\xA9"}));
  EXPECT_EQ(ids(ts), (std::vector<int32_t>{0, 1, 2, 4, 3}));
  EXPECT_TRUE(ts[3].oov);
}

TEST(Tokenizer, InvalidUtf8IsInputErrorNamingTheByte) {
  Vocab v({"a"});
  auto tok_ptr = Tokenizer::create(TokenizerConfig{}, v);
  const Tokenizer& tok = *tok_ptr;
  for (const char* bad : {"a \xFF", "a \xC0\xAF", "a \xED\xA0\x80", "a \xE2\x82", "a \xF4\x90\x80\x80"}) {
    try {
      tok.tokenize(bad);
      ADD_FAILURE() << "accepted invalid UTF-8";
    } catch (const InputError& e) {
      EXPECT_STREQ(e.what(), "invalid UTF-8 at byte 3");
    }
  }
}

TEST(Tokenizer, BadFiltersAreModelError) {
  Vocab v({"a"});
  TokenizerConfig c;
  c.filters = "\xFF";
  EXPECT_THROW(Tokenizer::create(c, v), lstmlm::ModelError);
}

TEST(Lowercase, MatchesPythonStrLower) {
  // Final sigma: word-final capital sigma after a cased letter becomes U+03C2; the apostrophe is
  // case-ignorable, so in "ΑΣ'Β" the sigma is followed by a cased letter and stays U+03C3.
  EXPECT_EQ(lower("ΟΔΟΣ ΣΑΣ Σ AΣ. ΑΣ'Β"), "οδος σας σ aς. ασ'β");
  EXPECT_EQ(lower("Σʰ AΣʰ"), "σʰ aςʰ");              // modifier letter ʰ is skipped (case-ignorable)
  EXPECT_EQ(lower("İSTANBUL"), "i\xCC\x87stanbul");  // İ -> i + U+0307, as Python does
  EXPECT_EQ(lower("ÀÉÎÕÜ ÇA Ÿ ŁÓDŹ"), "àéîõü ça ÿ łódź");
  EXPECT_EQ(lower("ПРИВЕТ Мир ЁЖ"), "привет мир ёж");
  EXPECT_EQ(lower("ǅǄǈ ẞ Ⅻ Ａ"), "ǆǆǉ ß ⅻ ａ");
}

}  // namespace

// Keras' text_to_word_sequence: lower, translate every filter to `split`, seq.split(split), drop "".
// Expected pieces are what Python 3.11 gives for the same steps.
TEST(Tokenizer, KerasSplitKeepsOtherWhitespaceInsideWords) {
  Vocab v({"<pad>", "pages", "\u200a488\u200a", "of", "a\tb"});
  TokenizerConfig c;
  c.lowercase = true;
  c.split = " ";
  auto tok_ptr = Tokenizer::create(c, v);
  const Tokenizer& tok = *tok_ptr;
  // 'pages \u200a488\u200a of'.split(' ') == ['pages', '\u200a488\u200a', 'of']
  auto ts = tok.tokenize("Pages \u200a488\u200a of");
  EXPECT_EQ(texts(ts), (std::vector<std::string>{"pages", "\u200a488\u200a", "of"}));
  EXPECT_EQ(ids(ts), (std::vector<int32_t>{1, 2, 3}));
  // Without `split` (str.split()) U+200A separates: the word the Keras model knows is never formed.
  c.split.reset();
  EXPECT_EQ(texts(Tokenizer::create(c, v)->tokenize("pages \u200a488\u200a of")),
            (std::vector<std::string>{"pages", "488", "of"}));
}

TEST(Tokenizer, KerasSplitDropsEmptyPiecesAndReplacesFilters) {
  Vocab v({"<pad>", "a", "b", "a\tb"});
  TokenizerConfig c;
  c.split = " ";
  c.filters = "!,";
  auto tok_ptr = Tokenizer::create(c, v);
  const Tokenizer& tok = *tok_ptr;
  // '  a,,b! a\tb  '.translate(!, -> ' ').split(' ') drops the empty strings; the tab is no separator.
  EXPECT_EQ(texts(tok.tokenize("  a,,b! a\tb  ")), (std::vector<std::string>{"a", "b", "a\tb"}));
  EXPECT_TRUE(tok.tokenize("  ,!  ").empty());
  // A separator other than a space, several characters long: 'x--y,z'.translate(, -> '--').split('--').
  c.split = "--";
  c.filters = ",";
  EXPECT_EQ(texts(Tokenizer::create(c, v)->tokenize("x--y,z ----w")),
            (std::vector<std::string>{"x", "y", "z ", "w"}));
}

TEST(Tokenizer, BadSplitIsModelErrorNamingTheField) {
  Vocab v({"a"});
  TokenizerConfig c;
  c.split = "\xFF";
  try {
    Tokenizer::create(c, v, "m/config.json");
    FAIL() << "no error";
  } catch (const lstmlm::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.split"), std::string::npos) << e.what();
  }
}
