// The CLI's output writers (cli/emit.hpp): bench rows in md/csv/json/jsonl, and one record rendered the same
// way by a writer whatever subcommand made it. End-to-end byte checks of the subcommands are in the other
// *_cli_test.cpp files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "emit.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/report/bench.hpp"

namespace lstmlm::cli {
namespace {

using report::bench_record;
using report::bench_table;

std::string rows_as(const std::vector<tasks::bench::Row>& rows, Format f) {
  std::vector<Record> recs;
  for (const auto& r : rows) recs.push_back(bench_record(r));
  Table t = bench_table();
  return render(f, &t, recs);
}

std::vector<tasks::bench::Row> sample_rows() {
  tasks::bench::Row a;
  a.model = "random";
  a.shape = "V=554 E=100 H=100x1";
  a.workload = tasks::bench::Workload::Score;
  a.batch = 2;
  a.length = 4;
  a.threads = 1;
  a.tokens_per_s = 1234.25;
  a.latency_p50_us = 12.25;
  a.note = "has, a comma and \"quotes\"";
  tasks::bench::Row b = a;
  b.workload = tasks::bench::Workload::Generate;
  b.note = "greedy argmax";
  return {a, b};
}

// Splits one CSV line (RFC 4180 quoting, no embedded line breaks).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out{""};
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(BenchFormat, CsvHasAHeaderAndQuotedFields) {
  auto rows = sample_rows();
  auto ls = lines(rows_as(rows, Format::Csv));
  ASSERT_EQ(ls.size(), 3u);
  auto header = split_csv(ls[0]);
  auto first = split_csv(ls[1]);
  ASSERT_EQ(first.size(), header.size());
  auto col = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  EXPECT_EQ(first[col("note")], rows[0].note);
  EXPECT_EQ(first[col("workload")], "score");
  EXPECT_DOUBLE_EQ(std::stod(first[col("tokens_per_s")]), 1234.25);
  EXPECT_EQ(split_csv(ls[2])[col("workload")], "generate");
}

TEST(BenchFormat, JsonAndJsonlParse) {
  auto rows = sample_rows();
  auto arr = nlohmann::json::parse(rows_as(rows, Format::Json));
  ASSERT_TRUE(arr.is_array());
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_EQ(arr[0]["note"], rows[0].note);
  EXPECT_EQ(arr[1]["workload"], "generate");
  EXPECT_DOUBLE_EQ(arr[0]["latency_p50_us"].get<double>(), 12.25);
  auto ls = lines(rows_as(rows, Format::Jsonl));
  ASSERT_EQ(ls.size(), 2u);
  for (size_t i = 0; i < ls.size(); ++i) EXPECT_EQ(nlohmann::json::parse(ls[i]), arr[i]);
}

TEST(BenchFormat, MarkdownTableIsRectangular) {
  auto ls = lines(rows_as(sample_rows(), Format::Md));
  ASSERT_EQ(ls.size(), 4u);  // header, separator, two rows
  auto cells = [](const std::string& l) { return std::count(l.begin(), l.end(), '|'); };
  for (const auto& l : ls) EXPECT_EQ(cells(l), cells(ls[0])) << l;
  EXPECT_NE(ls[2].find("1234 ± 0"), std::string::npos) << ls[2];
  EXPECT_THROW(parse_format("xml"), UsageError);
}

TEST(BenchFormat, EmptyRowsStillHaveTheirFrame) {
  EXPECT_EQ(rows_as({}, Format::Json), "[]\n");
  EXPECT_EQ(rows_as({}, Format::Jsonl), "");
  EXPECT_EQ(lines(rows_as({}, Format::Csv)).size(), 1u);  // the header
  EXPECT_EQ(lines(rows_as({}, Format::Md)).size(), 2u);   // header and separator
}

// A record with one field of every kind, as a subcommand would make it.
Record sample(const std::string& kind) {
  return {kind,
          {{"s", Value::str("a\"b\tc")},
           {"i", Value::integer(-3)},
           {"u", Value::uinteger(18446744073709551615ull)},
           {"n9", Value::num9(1.0 / 3.0)},
           {"r", Value::real(0.1)},
           {"b", Value::boolean(true)},
           {"z", Value::null()},
           {"inf", Value::num9(-std::numeric_limits<double>::infinity())},
           {"hidden", Value::str("display only"), true},
           {"l", Value::of_list({Value::integer(1), Value::integer(2)})}}};
}

TEST(Writers, JsonlRendersEveryKindIndependentlyOfTheSubcommand) {
  // Written out by hand from the rules in cli/emit.hpp: %.9g, shortest round-trip, JSON escapes, null for
  // a non-finite 9-digit number, display fields left out.
  const std::string spaced =
      "{\"s\": \"a\\\"b\\tc\", \"i\": -3, \"u\": 18446744073709551615, \"n9\": 0.333333333, \"r\": 0.1, "
      "\"b\": true, \"z\": null, \"inf\": null, \"l\": [1, 2]}\n";
  // One style for every subcommand: ", " and ": " (generate and bench once wrote them without blanks).
  for (const char* kind : {"score.line", "predict", "generate.sample", "bench.row", "rescore.hyp"}) {
    EXPECT_EQ(render(Format::Jsonl, nullptr, {sample(kind)}), spaced) << kind;
    auto j = nlohmann::json::parse(render(Format::Json, nullptr, {sample(kind)}));
    EXPECT_EQ(j, nlohmann::json::array({nlohmann::json::parse(spaced)})) << kind;
  }
}

TEST(Writers, TablesPickColumnsByNameAndExpandNestedLists) {
  Table t{"x", {"file", "position", "token", "oov", "logprob"}};
  Record r{"x",
           {{"file", Value::str("f")},
            {"logprob", Value::num9(-1)},
            {"words", Value::of_list({Value::of_record({{"token", Value::str("a")},
                                                        {"oov", Value::boolean(false)},
                                                        {"logprob", Value::num9(-0.5)}}),
                                      Value::of_record({{"token", Value::str("b,c")},
                                                        {"oov", Value::boolean(true)},
                                                        {"logprob", Value::null()}})})}}};
  Record other{"y", {{"file", Value::str("never")}}};
  EXPECT_EQ(render(Format::Tsv, &t, {r, other}),
            "file\tposition\ttoken\toov\tlogprob\nf\t1\ta\t0\t-0.5\nf\t2\tb,c\t1\t\n");
  EXPECT_EQ(render(Format::Csv, &t, {r, other}),
            "file,position,token,oov,logprob\nf,1,a,false,-0.5\nf,2,\"b,c\",true,null\n");
  Table flat{"x", {"logprob", "file"}};
  EXPECT_EQ(render(Format::Tsv, &flat, {r}), "logprob\tfile\n-1\tf\n");
}

TEST(Writers, FormatNamesRoundTrip) {
  for (Format f : {Format::Text, Format::Jsonl, Format::Tsv, Format::Md, Format::Csv, Format::Json,
                   Format::Lmzoo, Format::Kenlm, Format::Srilm, Format::Rnnlm})
    EXPECT_EQ(parse_format(format_name(f)), f);
  EXPECT_THROW(parse_format("arpa"), UsageError);
}

// A string cell holding a tab or line break stays one cell of one row (escape_text), so a row has the
// header's field count and a tsv reader never sees a shifted column.
TEST(Writers, TsvTabInTokenKeepsTheHeadersFieldCount) {
  Table t{"x", {"file", "position", "token", "oov"}};
  Record r{
      "x",
      {{"file", Value::str("a\tb")},
       {"words",
        Value::of_list({Value::of_record({{"token", Value::str("x\ty")}, {"oov", Value::boolean(false)}}),
                        Value::of_record({{"token", Value::str("\n")}, {"oov", Value::boolean(true)}})})}}};
  const std::string out = render(Format::Tsv, &t, {r});
  EXPECT_EQ(out, "file\tposition\ttoken\toov\na\\tb\t1\tx\\ty\t0\na\\tb\t2\t\\n\t1\n");
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) EXPECT_EQ(std::count(line.begin(), line.end(), '\t'), 3) << line;
}

}  // namespace
}  // namespace lstmlm::cli

namespace lstmlm::report {
namespace {

TEST(Writers, JsonStringsAreNlohmannsText) {
  // Plain ASCII is written as it is, the rest by nlohmann (escapes, UTF-8, invalid bytes as U+FFFD): the
  // same text either way.
  const std::vector<std::string> texts{"",
                                       "top",
                                       "the old king",
                                       "a\"b",
                                       "back\\slash",
                                       "tab\there",
                                       "new\nline",
                                       std::string("nul\0x", 5),
                                       "\x7f",
                                       "caf\xc3\xa9",
                                       "bad\xff",
                                       "~!@#$%^&*()_+{}|:<>?"};
  for (const std::string& s : texts)
    EXPECT_EQ(json_string(s),
              nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
        << s;
}

}  // namespace
}  // namespace lstmlm::report
