// lstmlm::normalize: cases derived by hand from Python 3.11's str.lower(), unicodedata (Unicode 14.0) and
// cc_net's text_normalizer.normalize (tests/py/ccnet_reference.py); NormalizeFile is the C++ side of
// tests/py/fidelity/test_normalize_ccnet.py, which compares it with Python over real text and every code
// point.
#include "lstmlm/normalize.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "lstmlm/error.hpp"

namespace {

using lstmlm::Normalization;
using lstmlm::normalize;
using namespace std::string_literals;

std::string ccnet(const std::string& s) { return normalize(s, Normalization::Ccnet); }

TEST(Normalize, ParsesItsNamesOnly) {
  for (auto n : {Normalization::None, Normalization::Lower, Normalization::Nfkc, Normalization::Ccnet})
    EXPECT_EQ(lstmlm::parse_normalization(lstmlm::to_string(n)), n);
  try {
    lstmlm::parse_normalization("NFKC");
    FAIL() << "no UsageError";
  } catch (const lstmlm::UsageError& e) {
    EXPECT_EQ(e.message(), "--normalize: 'NFKC' is not one of none, lower, nfkc, ccnet");
  }
}

TEST(Normalize, NoneKeepsEveryByte) {
  EXPECT_EQ(normalize("  A\xFF\t", Normalization::None), "  A\xFF\t");  // not even validated
}

TEST(Normalize, LowerIsPythonsStrLower) {
  EXPECT_EQ(normalize(" HELLO Wörld ", Normalization::Lower), " hello wörld ");  // no strip
  EXPECT_EQ(normalize("ΟΔΟΣ ΣΑ", Normalization::Lower), "οδος σα");              // final sigma at word end
  EXPECT_EQ(normalize("İ", Normalization::Lower), "i\u0307");                    // i + combining dot above
  EXPECT_EQ(normalize("Straße", Normalization::Lower), "straße");
}

TEST(Normalize, NfkcFoldsCompatibilityForms) {
  auto nfkc = [](const std::string& s) { return normalize(s, Normalization::Nfkc); };
  EXPECT_EQ(nfkc("\uFB01n"), "fin");            // ﬁ ligature U+FB01: <compat> f i
  EXPECT_EQ(nfkc("Ｈｅｌｌｏ！"), "Hello!");    // full-width U+FF28...: <wide> ASCII
  EXPECT_EQ(nfkc("x² ① Ⅻ"), "x2 1 XII");        // <super>, <circle>, <compat>
  EXPECT_EQ(nfkc("ｶﾞ"), "ガ");                  // half-width ka + voiced mark compose
  EXPECT_EQ(nfkc("e\u0301"), "\u00E9");         // canonical composition: é
  EXPECT_EQ(nfkc(" A "), " A ");                // no strip, no case change
  EXPECT_EQ(nfkc("\U0001E030"), "\U0001E030");  // Unicode 15.0 (<super> а): unknown to 14.0
  EXPECT_EQ(nfkc(""), "");
}

TEST(Normalize, CcnetStripsLowersAndDropsAccents) {
  EXPECT_EQ(ccnet(""), "");
  EXPECT_EQ(ccnet(" \t\u3000 "), "");                // all whitespace: stripped to nothing
  EXPECT_EQ(ccnet("  Café  "), "cafe");              // é -> e U+0301 (Mn, dropped)
  EXPECT_EQ(ccnet("Ångström"), "angstrom");          // Å -> a U+030A, ö -> o U+0308
  EXPECT_EQ(ccnet("İstanbul"), "istanbul");          // lower gives i U+0307, the Mn dropped
  EXPECT_EQ(ccnet("Straße Œuvre"), "straße œuvre");  // neither decomposes canonically
  EXPECT_EQ(ccnet("\uFB01"), "\uFB01");              // NFD is canonical only: the ligature stays
  EXPECT_EQ(ccnet("한"), "\u1112\u1161\u11AB");      // Hangul NFD: three jamo (Lo), never recomposed
  EXPECT_EQ(ccnet("कं का"), "क का");                  // anusvara U+0902 is Mn (dropped), aa U+093E Mc (kept)
}

TEST(Normalize, CcnetStripsPythonWhitespaceOnly) {
  EXPECT_EQ(ccnet("\x1C a \x1F"), "a");    // U+001C..001F: str.isspace(), not ICU's u_isspace
  EXPECT_EQ(ccnet("\u00A0a\u2009"), "a");  // no-break space, thin space
  EXPECT_EQ(ccnet("a\u200B"), "a\u200B");  // zero-width space: no whitespace (and Cf: kept)
  EXPECT_EQ(ccnet("\x01 abc"), " abc");    // U+0001 is no whitespace: strip stops, then it is dropped
  EXPECT_EQ(ccnet("\u2014x"), " - x");     // the map's spaces come after strip
}

TEST(Normalize, CcnetMapsEveryUnicodeDigitToZero) {
  EXPECT_EQ(ccnet("Tel 0123-456789"), "tel 0000-000000");
  EXPECT_EQ(ccnet("٣ ४ ๙"), "0 0 0");    // Arabic-Indic, Devanagari, Thai digits: Nd, so \d
  EXPECT_EQ(ccnet("１２"), "00");        // full-width digits are Nd: "１" never reaches the punct map
  EXPECT_EQ(ccnet("x² ½ ①"), "x² ½ ①");  // No, not Nd: kept
  EXPECT_EQ(ccnet("\U00011F50"), "\U00011F50");  // Kawi digit zero, Nd since Unicode 15.0 only
}

TEST(Normalize, CcnetPunctuationMap) {
  struct Case {
    const char *in, *out;
  };
  // Every entry of cc_net's UNICODE_PUNCT but "１" (a digit first), between two letters.
  const Case cases[] = {
      {"，", ","},  {"。", "."},  {"、", ","},  {"„", "\""},  {"”", "\""},  {"“", "\""}, {"«", "\""},
      {"»", "\""},  {"」", "\""}, {"「", "\""}, {"《", "\""}, {"》", "\""}, {"´", "'"},  {"∶", ":"},
      {"：", ":"},  {"？", "?"},  {"！", "!"},  {"（", "("},  {"）", ")"},  {"；", ";"}, {"–", "-"},
      {"—", " - "}, {"．", ". "}, {"～", "~"},  {"’", "'"},   {"…", "..."}, {"━", "-"},  {"〈", "<"},
      {"〉", ">"},  {"【", "["},  {"】", "]"},  {"％", "%"},  {"►", "-"},
  };
  for (const Case& c : cases) EXPECT_EQ(ccnet("a"s + c.in + "b"), "a"s + c.out + "b") << c.in;
  EXPECT_EQ(ccnet("\u2329x\u232A"), "<x>");  // U+2329/232A decompose canonically to U+3008/3009
  EXPECT_EQ(ccnet("‘x’ ‚"), "‘x' ‚");        // only the right single quote is in the map
}

TEST(Normalize, CcnetDropsC0AndC1ControlsOnly) {
  // After strip: "A\tB\x7F" "C\u0085D\u009F" "E"; then lower; then U+0000-001F and U+007F-009F dropped.
  EXPECT_EQ(ccnet("\tA\tB\x7F"
                  "C\u0085D\u009F"
                  "E\r\n"),
            "abcde");
  EXPECT_EQ(ccnet("a\u00ADb\u200Ec\uFEFF"), "a\u00ADb\u200Ec\uFEFF");  // Cf characters are not C0/C1
  EXPECT_EQ(ccnet("\uE000"), "\uE000");                                // private use (Co) kept too
}

TEST(Normalize, InvalidUtf8IsAnInputError) {
  for (auto n : {Normalization::Lower, Normalization::Nfkc, Normalization::Ccnet}) {
    for (std::string bad : {"ab\xFF"
                            "c"s,
                            "ab\xC3"s, "ab\xED\xA0\x80"s, "ab\xC0\xAF"s}) {
      try {
        normalize(bad, n);
        ADD_FAILURE() << "no InputError for " << lstmlm::to_string(n);
      } catch (const lstmlm::InputError& e) {
        EXPECT_EQ(e.message(), "invalid UTF-8 at byte 3");
      }
    }
  }
}

// For tests/py/fidelity/test_normalize_ccnet.py: normalizes each line ('\n'-separated) of LSTMLM_NORMALIZE_IN
// with LSTMLM_NORMALIZE_MODE into LSTMLM_NORMALIZE_OUT, one line each; skipped without them.
TEST(NormalizeFile, LinesOfTheFileNamedByTheEnvironment) {
  const char* in_path = std::getenv("LSTMLM_NORMALIZE_IN");
  const char* out_path = std::getenv("LSTMLM_NORMALIZE_OUT");
  const char* mode = std::getenv("LSTMLM_NORMALIZE_MODE");
  if (!in_path || !out_path || !mode) GTEST_SKIP() << "run by tests/py/fidelity/test_normalize_ccnet.py";
  std::ifstream in(in_path, std::ios::binary);
  ASSERT_TRUE(in) << in_path;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Normalization n = lstmlm::parse_normalization(mode);
  std::string out;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += normalize(std::string_view(text).substr(start, end - start), n) + '\n';
    start = end + 1;
  }
  std::ofstream(out_path, std::ios::binary) << out;
}

}  // namespace
