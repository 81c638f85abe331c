// `lstmlm score` / `lstmlm predict` end to end on the bundled word model (models/fairytales-word).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jsonl_records.hpp"
#include "test_util.hpp"

namespace {

using lstmlm::test::run_cli;

using lstmlm::test::model_arg;

using lstmlm::test::kScoreText;

using lstmlm::test::jsonl_records;

TEST(ScoreCli, JsonlParsesAndSumsMatchSummary) {
  auto r = run_cli("score " + model_arg() + " --output-format jsonl", kScoreText);
  ASSERT_EQ(r.status, 0) << r.err;
  auto recs = jsonl_records(r.out);
  ASSERT_EQ(recs.size(), 5u);  // 4 lines + summary
  double total = 0;
  int64_t tokens = 0, oovs = 0;
  for (size_t i = 0; i < 4; ++i) {
    const auto& l = recs[i];
    EXPECT_EQ(l["line"], i + 1);
    double sum = 0;
    int64_t n = 0;
    for (const auto& w : l["words"])
      if (!w["logprob"].is_null()) sum += w["logprob"].get<double>(), ++n;
    EXPECT_NEAR(sum, l["logprob"].get<double>(), 1e-4);
    EXPECT_EQ(n, l["tokens"].get<int64_t>());
    total += l["logprob"].get<double>();
    tokens += l["tokens"].get<int64_t>();
    oovs += l["oovs"].get<int64_t>();
  }
  EXPECT_EQ(recs[1]["tokens"], 1);  // the empty line: just <eos>
  EXPECT_EQ(recs[1]["words"][0]["token"], "<eos>");
  EXPECT_EQ(recs[2]["words"][2]["oov"], true);  // zzqx scored as <unk>
  EXPECT_EQ(recs[2]["words"][2]["token"], "zzqx");
  const auto& s = recs[4];
  EXPECT_EQ(s["type"], "summary");
  EXPECT_EQ(s["tokens"], tokens);
  EXPECT_EQ(s["oovs"], oovs);
  EXPECT_NEAR(s["logprob"].get<double>(), total, 1e-3);
  EXPECT_NEAR(s["perplexity"].get<double>(), std::exp(-total / static_cast<double>(tokens)), 1e-3);
}

TEST(ScoreCli, SameOutputWhateverBatchAndThreads) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += kScoreText;
  auto ref = run_cli("score " + model_arg() + " --output-format jsonl --batch-size 1 --threads 1", text);
  ASSERT_EQ(ref.status, 0) << ref.err;
  for (const char* opt :
       {"--batch-size 7 --threads 2", "--batch-size 64 --threads 2", "--batch-size 64 --threads 1"}) {
    auto r = run_cli("score " + model_arg() + " --output-format jsonl " + opt, text);
    EXPECT_EQ(r.out, ref.out) << opt;
  }
}

TEST(ScoreCli, BomAndCrlfAreHandled) {
  std::string crlf = "\xEF\xBB\xBFonce upon a time\r\nthe king\r\n";
  auto a = run_cli("score " + model_arg() + " --output-format tsv", crlf);
  auto b = run_cli("score " + model_arg() + " --output-format tsv", "once upon a time\nthe king\n");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(ScoreCli, InvalidUtf8AndMissingFileAreExit1) {
  auto r = run_cli("score " + model_arg(), "the king\nthe \xFF\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(":2: invalid UTF-8 at byte 5"), std::string::npos) << r.err;
  auto m = run_cli("score " + model_arg() + " no-such-file.txt");
  EXPECT_EQ(m.status, 1);
  EXPECT_NE(m.err.find("no-such-file.txt"), std::string::npos) << m.err;
  EXPECT_TRUE(m.out.empty());
}

TEST(ScoreCli, SkipEmptyKeepsOneRecordPerLine) {
  auto r = run_cli("score " + model_arg() + " -v sentence --output-format jsonl --skip-empty",
                   "the king\n\nthe\n");
  auto recs = jsonl_records(r.out);
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[1]["skipped"], true);
  EXPECT_EQ(recs[3]["skipped"], 1);
}

TEST(ScoreCli, DocumentModeEqualsOneLongLine) {
  // The model's stream for document mode is "the king <eos> the queen <eos>", which is what sentence mode
  // scores for the single line "the king <eos> the queen" (the eos token is in the vocabulary).
  auto d = run_cli("score " + model_arg() + " -v summary --output-format jsonl --context document",
                   "the king\nthe queen\n");
  auto s =
      run_cli("score " + model_arg() + " -v summary --output-format jsonl", "the king <eos> the queen\n");
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_NEAR(jsonl_records(d.out)[0]["logprob"].get<double>(),
              jsonl_records(s.out)[0]["logprob"].get<double>(), 1e-4);
}

TEST(PredictCli, IdsJsonlInterface) {
  auto r = run_cli("predict " + model_arg() + " --output-format jsonl --top 0 --ids '2 78' '5'");
  ASSERT_EQ(r.status, 0) << r.err;
  auto recs = jsonl_records(r.out);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0]["context"], "2 78");
  EXPECT_EQ(recs[0]["ids"], nlohmann::json::parse("[2, 78]"));
  const auto& top = recs[0]["top"];
  ASSERT_EQ(top.size(), 554u);
  double sum = 0;
  for (size_t i = 0; i < top.size(); ++i) {
    sum += top[i]["prob"].get<double>();
    EXPECT_NEAR(std::log(top[i]["prob"].get<double>()), top[i]["logprob"].get<double>(), 1e-6);
    if (i) {
      EXPECT_GE(top[i - 1]["prob"].get<double>(), top[i]["prob"].get<double>());
    }
  }
  EXPECT_NEAR(sum, 1.0, 1e-4);
}

TEST(PredictCli, AgreesWithScore) {
  // score's p(king | <eos> the) is predict's probability of "king" after "the" (eos fed first).
  auto s = run_cli("score " + model_arg() + " --output-format jsonl", "the king\n");
  auto p = run_cli("predict " + model_arg() + " --output-format jsonl --top 0 the");
  double want = jsonl_records(s.out)[0]["words"][1]["logprob"].get<double>();
  auto records = jsonl_records(p.out);  // kept alive: a range-for over a member of a temporary would dangle
  for (const auto& c : records[0]["top"])
    if (c["token"] == "king") {
      EXPECT_EQ(c["logprob"].get<double>(), want);
    }
  EXPECT_EQ(jsonl_records(p.out)[0]["ids"], nlohmann::json::parse("[1, 2]"));
}

TEST(PredictCli, PadToWithoutPadIdPadsWithZeroAndStdinBatches) {
  // A model without tokenizer.pad_id is padded with id 0, Keras pad_sequences' default value.
  auto r = run_cli("predict " + model_arg() + " --output-format jsonl --pad-to 4 the");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(jsonl_records(r.out)[0]["pads"], 2) << r.out;  // eos start token + "the" + two pads
  auto a = run_cli("predict " + model_arg() + " --output-format jsonl --top 3 --batch-size 1",
                   "the\nonce upon\n\n");
  auto b = run_cli("predict " + model_arg() + " --output-format jsonl --top 3 'the' 'once upon' ''");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

}  // namespace
