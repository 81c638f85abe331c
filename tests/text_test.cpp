// lstmlm::printable, the one escaper of every diagnostic, and utf8_sequence_length under it: the cases
// derived by hand from RFC 3629's table of well-formed byte sequences.
#include "lstmlm/text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "lstmlm/error.hpp"
#include "test_util.hpp"

namespace {

using lstmlm::printable;
using lstmlm::utf8_sequence_length;
using namespace std::string_literals;

TEST(Utf8SequenceLength, WellFormedAndIllFormedSequences) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9", 0), 2u);          // é U+00E9
  EXPECT_EQ(utf8_sequence_length("\xE2\x80\x99", 0), 3u);      // ’ U+2019
  EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x98\x80", 0), 4u);  // U+1F600
  EXPECT_EQ(utf8_sequence_length("\xC0\xAF", 0), 0u);          // overlong '/'
  EXPECT_EQ(utf8_sequence_length("\xE0\x80\xAF", 0), 0u);      // overlong, 3 bytes
  EXPECT_EQ(utf8_sequence_length("\xED\xA0\x80", 0), 0u);      // surrogate U+D800
  EXPECT_EQ(utf8_sequence_length("\xF4\x90\x80\x80", 0), 0u);  // U+110000
  EXPECT_EQ(utf8_sequence_length("\xE2\x80", 0), 0u);          // truncated
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);              // a lone continuation byte
}

TEST(Printable, EscapesControlBytesAndIllFormedUtf8Only) {
  EXPECT_EQ(printable("caf\xC3\xA9 \xE2\x80\x99"), "caf\xC3\xA9 \xE2\x80\x99");
  EXPECT_EQ(printable("a\nb\tc\x1b[31m\x7f"), "a\\x0ab\\x09c\\x1b[31m\\x7f");
  EXPECT_EQ(printable("nu\0l"s), "nu\\x00l");
  EXPECT_EQ(printable("\xE2\x80 x"), "\\xe2\\x80 x");  // each byte of a broken sequence
  EXPECT_EQ(printable("\xED\xA0\x80"), "\\xed\\xa0\\x80");
}

TEST(Printable, CutsAfterMaxBytes) {
  EXPECT_EQ(printable("abcdef", 3), "abc...");
  EXPECT_EQ(printable("abc", 3), "abc");
  // A cut never splits a character: the one that reaches the bound is written whole.
  EXPECT_EQ(printable("a\xC3\xA9xyz", 2), "a\xC3\xA9...");
  EXPECT_EQ(printable("\n\n\n", 4), "\\x0a...");
}

TEST(Printable, AHugeLstmlmIsaValueIsQuotedBounded) {
  setenv("LSTMLM_ISA", std::string(100000, 'x').c_str(), 1);
  auto r = lstmlm::test::run_cli("score -m '" +
                                     (lstmlm::test::source_dir() / "models" / "fairytales-word").string() +
                                     "' --precision int8",
                                 "the\n");
  unsetenv("LSTMLM_ISA");
  EXPECT_EQ(r.status, 2);
  EXPECT_LT(r.err.size(), 400u) << r.err.substr(0, 400);
  EXPECT_NE(r.err.find("LSTMLM_ISA='" + std::string(64, 'x') + "...' is not a kernel level"),
            std::string::npos)
      << r.err.substr(0, 400);
}

}  // namespace

namespace {

// format_g9 is every number of the JSON outputs: printf's %.9g text, compared with printf itself over
// values of every magnitude, the exponent's switch points (1e-5, 1e9) and both signs.
TEST(FormatG9, IsPrintfsG9Text) {
  std::vector<double> values = {
      0.0,         -0.0,        1.0,         -1.0, 0.1,    1e-5,   9.9999999949e-5,       1e-4,
      123456789.0, 999999999.4, 999999999.6, 1e9,  1e-300, 5e-324, 1.7976931348623157e308};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(-10.0, 10.0);
  std::uniform_int_distribution<int> exponent(-40, 40);
  for (int i = 0; i < 20000; ++i) values.push_back(mantissa(rng) * std::pow(10.0, exponent(rng)));
  for (double v : values) {
    char expected[64];
    std::snprintf(expected, sizeof expected, "%.9g", v);
    ASSERT_EQ(lstmlm::format_g9(v), expected) << v;
  }
  EXPECT_EQ(lstmlm::format_g9(std::nan("")), "nan");
  EXPECT_EQ(lstmlm::format_g9(-HUGE_VAL), "-inf");
}

}  // namespace
