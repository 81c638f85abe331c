// `lstmlm bench` end to end on a tiny random shape: the grid of rows, the row fields, the formats and
// the usage errors. Nothing here asserts a speed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "test_util.hpp"

namespace {

using lstmlm::test::run_cli;

std::vector<nlohmann::json> parse_jsonl(const std::string& s) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) rows.push_back(nlohmann::json::parse(l));
  return rows;
}

// Short repetitions: these runs check structure, not speed.
const std::string kFast = " --min-time 0 -r 2 --warmup 0";

TEST(BenchCli, OneRowPerCellOfTheGrid) {
  auto r = run_cli("bench --shape 40,6,8,2 -w score,predict,generate -b 1,3 -s 2,5 -t 1 -o jsonl" + kFast);
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = parse_jsonl(r.out);
  ASSERT_EQ(rows.size(), 3u * 2 * 2);
  std::set<std::tuple<std::string, int, int>> cells;
  for (const auto& row : rows) {
    cells.insert({row["workload"].get<std::string>(), row["batch"].get<int>(), row["length"].get<int>()});
    EXPECT_EQ(row["model"], "random");
    EXPECT_EQ(row["shape"], "V=40 E=6 H=8x2");
    EXPECT_EQ(row["threads"], 1);
    EXPECT_EQ(row["repetitions"], 2);
    EXPECT_GE(row["calls"].get<int>(), 2);  // at least one call per repetition
    EXPECT_DOUBLE_EQ(row["tokens_per_call"].get<double>(),
                     row["batch"].get<double>() * row["length"].get<double>());
    EXPECT_GT(row["tokens_per_s"].get<double>(), 0);
    EXPECT_LE(row["latency_p50_us"].get<double>(), row["latency_p99_us"].get<double>());
    EXPECT_GT(row["gflops"].get<double>(), 0);
    EXPECT_FALSE(row["isa"].get<std::string>().empty());
    EXPECT_FALSE(row["build"].get<std::string>().empty());
  }
  EXPECT_EQ(cells.size(), rows.size());  // every cell exactly once
}

// The cells of format v3 on a random shape: the shape names the cell (FLOPs: BenchFlops.GruAndRnnLayers).
TEST(BenchCli, CellOfARandomShape) {
  auto lstm = run_cli("bench --shape 40,6,8,2 -w score -b 2 -s 3 -t 1 -o jsonl" + kFast);
  auto gru = run_cli("bench --shape 40,6,8,2 --cell gru -w score -b 2 -s 3 -t 1 -o jsonl" + kFast);
  auto rnn = run_cli("bench --shape 40,6,8,2 --cell RNN -w score -b 2 -s 3 -t 1 -o jsonl" + kFast);
  ASSERT_EQ(lstm.status, 0) << lstm.err;
  ASSERT_EQ(gru.status, 0) << gru.err;
  EXPECT_EQ(rnn.status, 2) << rnn.err;  // the names are lowercase, as in config.json
  EXPECT_NE(rnn.err.find("--cell expects lstm, gru or rnn, got 'RNN'"), std::string::npos) << rnn.err;
  EXPECT_EQ(parse_jsonl(lstm.out).at(0)["shape"], "V=40 E=6 H=8x2");
  EXPECT_EQ(parse_jsonl(gru.out).at(0)["shape"], "V=40 E=6 H=8x2 gru");
  auto with_model = run_cli("bench -m /nonexistent --cell gru");
  EXPECT_EQ(with_model.status, 2);
  EXPECT_NE(with_model.err.find("--cell applies to --shape"), std::string::npos) << with_model.err;
}

TEST(BenchCli, MarkdownIsTheDefault) {
  auto r = run_cli("bench --shape 20,4,4,1 -w predict -b 2 -s 3 -t 1" + kFast);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("| model | shape | workload |", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("| random | V=20 E=4 H=4x1 | predict | 2 | 3 | 1 |"), std::string::npos) << r.out;
}

TEST(BenchCli, UsageErrorsExitTwo) {
  // Each message names what is wrong: bench's own rule, or the option.
  const std::pair<const char*, const char*> cases[] = {
      {"bench", "lstmlm: error: bench: give exactly one of"},
      {"bench --shape 10,4,4", "lstmlm: error: bench: --shape expects V,E,H,L"},
      {"bench --shape 10,4,4,1 -o xml",
       "lstmlm: error: --output: 'xml' is not one of md, csv, json or jsonl"},
      {"bench --shape 10,4,4,1 -w train", "lstmlm: error: bench"},
      {"bench --shape 10,4,4,1 -b 0", "lstmlm: error: -b/--batch-size: 0 is not in [1, 1000000]"},
      {"bench --shape 10,4,4,1 -b two", "lstmlm: error: -b/--batch-size: expects a comma list of integers"},
      {"bench --shape 10,4,4,1 -w startup", "lstmlm: error: bench: the startup workload needs -m"}};
  for (const auto& [args, message] : cases) {
    auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(r.err.rfind(message, 0), 0u) << args << ": " << r.err;
  }
}

TEST(BenchCli, MissingInputFileIsBadInput) {
  auto r = run_cli("bench --shape 10,4,4,1 --input /nonexistent/lstmlm-bench-input.txt" + kFast);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("lstmlm-bench-input.txt"), std::string::npos) << r.err;
}

}  // namespace

namespace {

std::filesystem::path bundled_model() { return lstmlm::test::source_dir() / "models" / "charrnn-space"; }

TEST(BenchCli, StartupAndInputOnTheBundledModel) {
  if (!std::filesystem::exists(bundled_model() / "config.json")) GTEST_SKIP() << "no bundled model";
  auto text = std::filesystem::temp_directory_path() / "lstmlm_bench_input.txt";
  {
    std::ofstream f(text);
    f << "the quick brown fox\njumps over the lazy dog\n";
  }
  auto r = run_cli("bench -m '" + bundled_model().string() + "' --input '" + text.string() +
                   "' -w startup,score -b 2 -s 4 -t 1 -o jsonl" + kFast);
  std::filesystem::remove(text);
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = parse_jsonl(r.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["workload"], "startup");
  EXPECT_EQ(rows[0]["model"], "charrnn-space");
  EXPECT_EQ(rows[0]["calls"], 1);
  // The first line, tokenized by the model: the startup row predicts after all of its tokens.
  EXPECT_GT(rows[0]["length"].get<int>(), 0);
  EXPECT_NE(rows[0]["note"].get<std::string>().find("load "), std::string::npos);
  EXPECT_EQ(rows[1]["workload"], "score");
  EXPECT_EQ(rows[1]["model"], "charrnn-space");
}

}  // namespace
