// The request vocabulary (lstmlm/tasks/request.hpp): every word of every option parses to its value and
// back; a word that is none of them is one UsageError carrying the option's key, rendered by each front end
// in its own spelling (the CLI's message, the server's field, Python's keyword), other options named inside
// the detail included; the one text splitter's BOM, CRLF and last-line rules.
#include "lstmlm/tasks/request.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lstmlm/error.hpp"
#include "micro_model.hpp"

namespace {

using namespace lstmlm;
using namespace lstmlm::tasks;

template <class E>
void round_trips(const Choices<E>& c, size_t expected_words) {
  ASSERT_EQ(c.names().size(), expected_words) << c.key();
  for (const auto& n : c.names()) EXPECT_EQ(c.name(c.parse(n)), n) << c.key();
  EXPECT_EQ(c.name(c.fallback()), c.names().front()) << c.key();
}

TEST(RequestVocabulary, EveryWordParsesToItsValueAndBack) {
  round_trips(context_choices(), 2);
  round_trips(oov_choices(), 2);
  round_trips(aggregate_choices(), 2);
  round_trips(units_choices(), 5);
  round_trips(normalize_choices(), 4);
  round_trips(precision_choices(), 3);
  round_trips(rescore_context_choices(), 2);
  round_trips(ngram_units_choices(), 3);
  round_trips(softmax_choices(), 2);
  EXPECT_EQ(softmax_choices().parse("skip"), Softmax::Skip);
  EXPECT_EQ(units_choices().parse("prob"), Units::Prob);
  EXPECT_EQ(context_choices().parse("document"), ContextMode::Document);
  EXPECT_EQ(ngram_units_choices().parse("cost"), LogUnits::Cost);
  EXPECT_EQ(precision_choices().parse("int8"), Precision::Int8);
}

TEST(RequestVocabulary, ABadWordCarriesTheKeyEachFaceSpells) {
  try {
    units_choices().parse("nats\n");
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.key(), "units");
    EXPECT_EQ(e.message(), "--units: expected one of default, ln, log10, bits, prob, got \"nats\\n\"");
    EXPECT_EQ(e.spelled([](const std::string& k) { return "field '" + k + "'"; }),
              "field 'units': expected one of default, ln, log10, bits, prob, got \"nats\\n\"");
    EXPECT_EQ(e.spelled([](const std::string& k) { return k; }),
              "units: expected one of default, ln, log10, bits, prob, got \"nats\\n\"");
  }
}

TEST(RequestVocabulary, OptionsNamedInsideADetailAreSpelledByTheFace) {
  ScoreOptions s;
  s.rank = true;
  s.aggregate = Aggregate::Words;
  try {
    s.validate();
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.key(), "rank");
    EXPECT_EQ(e.message().rfind("--rank: not defined with --aggregate words", 0), 0u) << e.message();
    const std::string field = e.spelled([](const std::string& k) { return "field '" + k + "'"; });
    EXPECT_EQ(field.rfind("field 'rank': not defined with field 'aggregate' words", 0), 0u) << field;
  }
  // A word of the input that holds the marker's byte cannot name an option: it is escaped when quoted.
  try {
    oov_choices().parse(
        "\x1f"
        "rank\x1f");
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.spelled([](const std::string& k) { return "<" + k + ">"; }),
              "<oov>: expected one of skip, error, got \"\\u001frank\\u001f\"");
  }
}

TEST(RequestVocabulary, OneSplitterForEveryText) {
  std::vector<std::string> lines;
  std::vector<LineEnd> ends;
  split_lines(
      "\xEF\xBB\xBF"
      "a\r\nb\n\nc",
      lines, ends);
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(ends, (std::vector<LineEnd>{LineEnd::CrLf, LineEnd::Lf, LineEnd::Lf, LineEnd::None}));
  lines.clear();
  ends.clear();
  split_lines(
      "\xEF\xBB\xBF"
      "x\n",
      lines, ends, false);  // a JSONL document keeps its BOM
  EXPECT_EQ(lines, (std::vector<std::string>{"\xEF\xBB\xBF"
                                             "x"}));
  EXPECT_EQ(ends, (std::vector<LineEnd>{LineEnd::Lf}));
  lines.clear();
  ends.clear();
  split_lines("", lines, ends);
  EXPECT_TRUE(lines.empty());
}

TEST(RequestVocabulary, TheDefaultWindowIsTheGivenOneElseTheModels) {
  const auto m = test::micro_model();  // no input_length: the carried state
  EXPECT_FALSE(default_window(*m, std::nullopt).windowed());
  const auto w = default_window(*m, WindowOptions{WindowMode::Window, 3});
  EXPECT_EQ(w.mode, WindowMode::Window);
  EXPECT_EQ(w.length, 3);
}

}  // namespace
