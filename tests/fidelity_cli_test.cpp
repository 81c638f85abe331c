// `--precision` on score, predict, generate and bench, and `lstmlm fidelity`, end to end on the bundled
// models: fp32 is the default and changes no byte, a name outside fp32|bf16|int8 is a usage error, a
// precision this build lacks is the library's one-line error (exit 2), fidelity's fp32-against-fp32 run is
// exact and its perplexity is score's, and its bad inputs are one-line errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "jsonl_records.hpp"
#include "lstmlm/engine.hpp"
#include "test_util.hpp"

namespace {

using lstmlm::test::run_cli;

using lstmlm::test::model_arg;

const std::string kFidelityText =
    "once upon a time there was a king\n\nthe queen zzqx said\nand the king went to the mountains .\n";

using lstmlm::test::count_lines;

// The availability the library reports for a precision: "" when it runs, else its one-line message.
TEST(PrecisionCli, Fp32IsTheDefaultAndChangesNoByte) {
  const std::pair<std::string, std::string> runs[] = {
      {"score " + model_arg() + " --output-format jsonl", kFidelityText},
      {"score " + model_arg("charrnn-space") + " --context document", "the stars\nand the moon\n"},
      {"predict " + model_arg() + " --top 5", "the king\nonce upon\n"},
      {"generate " + model_arg() + " -p 'the old man' -n 12 --seed 42", ""},
      {"generate " + model_arg() + " -p 'the old man' -n 5 --seed 7 --num-samples 3 --output-format jsonl",
       ""}};
  for (const auto& [args, in] : runs) {
    auto a = run_cli(args, in);
    auto b = run_cli(args + " --precision fp32", in);
    ASSERT_EQ(a.status, 0) << args << "\n" << a.err;
    ASSERT_EQ(b.status, 0) << args << "\n" << b.err;
    EXPECT_EQ(a.out, b.out) << args;
    EXPECT_FALSE(a.out.empty()) << args;
  }
}

TEST(PrecisionCli, AnUnknownNameIsAUsageErrorListingTheChoices) {
  for (const std::string& cmd : {"score " + model_arg(), "predict " + model_arg() + " the",
                                 "generate " + model_arg() + " -n 2 --seed 1", "fidelity " + model_arg()}) {
    auto r = run_cli(cmd + " --precision fp16", "the king\n");
    EXPECT_EQ(r.status, 2) << cmd;
    EXPECT_TRUE(r.out.empty()) << cmd;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("--precision: 'fp16' is not one of fp32, bf16, int8"), std::string::npos) << r.err;
  }
  auto b = run_cli("bench --shape 20,4,4,1 -w predict --min-time 0 -r 1 --warmup 0 --precision fp32,fp16");
  EXPECT_EQ(b.status, 2);
  EXPECT_TRUE(b.out.empty());
  EXPECT_EQ(b.err, "lstmlm: error: --precision: 'fp16' is not one of fp32, bf16, int8\n");
  auto e = run_cli("bench --shape 20,4,4,1 --precision ,");
  EXPECT_EQ(e.status, 2);
  EXPECT_NE(e.err.find("--precision: needs at least one of fp32, bf16, int8"), std::string::npos) << e.err;
}

// Every precision runs on every x86-64 (bf16 and int8 down to scalar; bf16 is refused where AVX2 is the best
// level, and skipped here there): each subcommand runs it and bench
// names the kernels. What is left to refuse is a bad LSTMLM_ISA: exit 2, one line, nothing on stdout,
// before any input is read.
TEST(PrecisionCli, EveryPrecisionRunsAndABadIsaIsTheOneLineError) {
  for (const std::string p : {"bf16", "int8"}) {
    if (lstmlm::kernels_for(lstmlm::parse_precision(p)).ends_with("/refused"))
      continue;  // bf16 on an AVX2-only CPU
    auto r = run_cli("bench " + model_arg() +
                     " -w predict -t 1 --min-time 0 -r 1 --warmup 0 -o jsonl --precision " + p);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(lstmlm::test::jsonl_records(r.out).at(0)["isa"].get<std::string>().rfind(p + "/", 0), 0u);
    setenv("LSTMLM_ISA", "avx9000", 1);
    for (const std::string& cmd : {"score " + model_arg(), "predict " + model_arg() + " the",
                                   "generate " + model_arg() + " -n 2 --seed 1", "fidelity " + model_arg(),
                                   "bench " + model_arg() + " -w predict --min-time 0 -r 1 --warmup 0"}) {
      auto bad = run_cli(cmd + " --precision " + p, "the king\n");
      EXPECT_EQ(bad.status, 2) << cmd;
      EXPECT_TRUE(bad.out.empty()) << cmd << ": " << bad.out;
      EXPECT_EQ(bad.err.rfind("lstmlm: error: LSTMLM_ISA='avx9000' is not a kernel level", 0), 0u)
          << cmd << ": " << bad.err;
      EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << cmd << ": " << bad.err;
    }
    unsetenv("LSTMLM_ISA");
  }
}

TEST(PrecisionCli, BenchRowsNameTheirPrecision) {
  auto r = run_cli(
      "bench --shape 20,4,4,1 -w score,predict -b 1,2 -t 1 --min-time 0 -r 1 --warmup 0 "
      "-o jsonl --precision fp32,fp32");
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = lstmlm::test::jsonl_records(r.out);
  ASSERT_EQ(rows.size(), 2u * 2 * 2);  // workloads x batches x precisions
  for (const auto& row : rows) EXPECT_EQ(row["isa"].get<std::string>().rfind("fp32/", 0), 0u) << row;
  // startup too: one row per precision.
  auto st = run_cli("bench " + model_arg() + " -w startup -t 1 -o jsonl --precision fp32,fp32");
  ASSERT_EQ(st.status, 0) << st.err;
  auto srows = lstmlm::test::jsonl_records(st.out);
  ASSERT_EQ(srows.size(), 2u);
  for (const auto& row : srows) EXPECT_EQ(row["isa"].get<std::string>().rfind("fp32/", 0), 0u) << row;
  // The default run has the same columns as before: no field was added.
  auto d = run_cli("bench --shape 20,4,4,1 -w predict -t 1 --min-time 0 -r 1 --warmup 0 -o csv");
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(d.out.substr(0, d.out.find('\n')),
            "model,shape,workload,batch,length,threads,repetitions,calls,tokens_per_call,tokens_per_s,"
            "tokens_per_s_sd,tokens_per_s_median,calls_per_s,latency_p50_us,latency_p99_us,gflops,isa,build,"
            "note");
}

nlohmann::json fidelity_json(const std::string& args, const std::string& in) {
  auto r = run_cli("fidelity " + args + " --output-format jsonl", in);
  EXPECT_EQ(r.status, 0) << r.err;
  auto recs = lstmlm::test::jsonl_records(r.out);
  EXPECT_EQ(recs.size(), 1u) << r.out;
  return recs.empty() ? nlohmann::json() : recs[0];
}

nlohmann::json score_summary(const std::string& args, const std::string& in) {
  auto r = run_cli("score " + args + " -v summary --output-format jsonl", in);
  EXPECT_EQ(r.status, 0) << r.err;
  auto recs = lstmlm::test::jsonl_records(r.out);
  return recs.empty() ? nlohmann::json() : recs.back();
}

TEST(FidelityCli, Fp32AgainstItselfIsExactAndItsPerplexityIsScores) {
  std::string text;
  for (int i = 0; i < 5; ++i) text += kFidelityText;
  const std::pair<std::string, std::string> cases[] = {
      {model_arg(), text},
      {model_arg() + " --context document", text},
      {model_arg("charrnn-space") + " --context document", "the stars are far away\nand the moon is near\n"},
      {model_arg("charrnn-space"), "the stars are far away\nand the moon is near\n"},
      {model_arg() + " --pad-to 3", text}};
  for (const auto& [args, in] : cases) {
    SCOPED_TRACE(args);
    const auto f = fidelity_json(args + " --precision fp32", in);
    const auto s = score_summary(args, in);
    ASSERT_TRUE(f.is_object() && s.is_object());
    EXPECT_EQ(f["type"], "fidelity");
    EXPECT_EQ(f["precision"], "fp32");
    EXPECT_GT(f["tokens"].get<int64_t>(), 10);
    EXPECT_EQ(f["tokens"], s["tokens"]);
    EXPECT_EQ(f["mean_kl"].get<double>(), 0.0);
    EXPECT_EQ(f["max_kl"].get<double>(), 0.0);
    EXPECT_EQ(f["max_abs_dlogp"].get<double>(), 0.0);
    EXPECT_EQ(f["top1_agree"], f["tokens"]);
    EXPECT_EQ(f["top1_agreement"].get<double>(), 1.0);
    EXPECT_EQ(f["perplexity_ref"].get<double>(), s["perplexity"].get<double>());
    EXPECT_EQ(f["perplexity_low"].get<double>(), s["perplexity"].get<double>());
    EXPECT_EQ(f["delta_ppl_rel"].get<double>(), 0.0);
    EXPECT_EQ(f["kernels_ref"], f["kernels_low"]);
    EXPECT_EQ(f["kernels_ref"].get<std::string>().rfind("fp32/", 0), 0u);
  }
}

TEST(FidelityCli, TextAndJsonLayouts) {
  auto r = run_cli("fidelity " + model_arg() + " --precision fp32", kFidelityText);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto f = fidelity_json(model_arg() + " --precision fp32", kFidelityText);
  const std::string n = std::to_string(f["tokens"].get<int64_t>());
  const std::string k = f["kernels_ref"].get<std::string>();
  const auto s = score_summary(model_arg(), kFidelityText);
  char ppl[64];
  std::snprintf(ppl, sizeof ppl, "%.4f", s["perplexity"].get<double>());
  EXPECT_EQ(r.out, "Tokens compared:\t" + n +
                       "\nMean KL(fp32||fp32):\t0\nMax KL:\t0\nMax |delta ln p(target)|:\t0\n"
                       "Top-1 agreement:\t100.0000% (" +
                       n + " of " + n + ")\nPerplexity fp32:\t" + ppl + "\nPerplexity fp32:\t" + ppl +
                       "\nRelative delta PPL:\t+0.0000%\nKernels fp32:\t" + k + "\nKernels fp32:\t" + k +
                       "\n");
  auto j = run_cli("fidelity " + model_arg() + " --precision fp32 --output-format json", kFidelityText);
  ASSERT_EQ(j.status, 0) << j.err;
  auto arr = nlohmann::json::parse(j.out);
  ASSERT_TRUE(arr.is_array() && arr.size() == 1u) << j.out;
  EXPECT_EQ(arr[0], f);
  auto h = run_cli("fidelity --help");
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("--precision"), std::string::npos);
  EXPECT_NE(h.out.find("top1_agreement"), std::string::npos);
}

TEST(FidelityCli, BadInputIsOneLineWithItsExitCode) {
  auto m = run_cli("fidelity " + model_arg() + " --precision fp32 no-such-file.txt");
  EXPECT_EQ(m.status, 1);
  EXPECT_TRUE(m.out.empty());
  EXPECT_EQ(m.err, "lstmlm: error: no-such-file.txt: cannot open: No such file or directory\n");
  auto e = run_cli("fidelity " + model_arg() + " --precision fp32", "");
  EXPECT_EQ(e.status, 1);
  EXPECT_TRUE(e.out.empty());
  EXPECT_EQ(count_lines(e.err), 1u) << e.err;
  EXPECT_NE(e.err.find("lstmlm: error: -: no scored token to compare"), std::string::npos) << e.err;
  // charrnn-space has no start token: one character per line is context only, nothing is scored.
  auto c = run_cli("fidelity " + model_arg("charrnn-space") + " --precision fp32", "a\nb\n");
  EXPECT_EQ(c.status, 1);
  EXPECT_NE(c.err.find("no scored token to compare"), std::string::npos) << c.err;
  // A one-character stream without a start token: its only token is context only.
  auto one = run_cli(
      "fidelity " + model_arg("charrnn-space") + " --precision fp32 --context document --no-eos", "a");
  EXPECT_EQ(one.status, 1);
  EXPECT_NE(one.err.find("no scored token to compare"), std::string::npos) << one.err;
  auto u = run_cli("fidelity " + model_arg() + " --precision fp32", "the \xFF king\n");
  EXPECT_EQ(u.status, 1);
  EXPECT_EQ(u.err, "lstmlm: error: -:1: invalid UTF-8 at byte 5\n");
  auto p = run_cli("fidelity " + model_arg(), "the king\n");
  EXPECT_EQ(p.status, 2);
  EXPECT_NE(p.err.find("--precision is required"), std::string::npos) << p.err;
  auto d = run_cli("fidelity -m no-such-model-dir --precision fp32", "the king\n");
  EXPECT_EQ(d.status, 1);
  EXPECT_EQ(count_lines(d.err), 1u) << d.err;
}

}  // namespace
