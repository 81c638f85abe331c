// The per-line token limit (kMaxLineTokens) that bounds what one input line costs in memory: a line over
// it is an error naming the line, found by the tokenizer before the excess tokens are made.
#include <gtest/gtest.h>

#include <string>

#include "hostile_util.hpp"
#include "lstmlm/tasks/input.hpp"

using lstmlm::test::run_cli_to;
using lstmlm::test::Stdout;

namespace {

std::string bundled_dir(const char* name) {
  return "-m '" + (lstmlm::test::source_dir() / "models" / name).string() + "'";
}

}  // namespace

TEST(ScoreLimits, LineOverTheTokenLimitIsAnErrorNamingTheLine) {
  const size_t n = lstmlm::tasks::kMaxLineTokens;
  // Char model: n + 1 characters. Before the limit this 1 MB line took about 110 MB at -v sentence and
  // about 930 MB at -v word (measured on an 8 MB line); now it is refused under a 256 MiB cap.
  std::string in = "ok\n" + std::string(n + 1, 'a') + "\n";
  auto r = run_cli_to("score " + bundled_dir("charrnn-space") + " --output-format jsonl", Stdout::File, in,
                      lstmlm::test::memory_cap(256));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("lstmlm: error: -:2: more than 1048576 tokens on one line (the limit per line"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("\"line\":2"), std::string::npos) << "a record of the refused line was written";

  // Word model, --ids input: n + 1 ids (the id parser has the same limit).
  std::string ids;
  for (size_t i = 0; i <= n; ++i) ids += "3 ";
  auto q = run_cli_to("score " + bundled_dir("fairytales-word") + " --ids -v sentence", Stdout::File,
                      ids + "\n", lstmlm::test::memory_cap(256));
  EXPECT_EQ(q.status, 1) << q.err;
  EXPECT_NE(q.err.find("-:1: more than 1048576 tokens on one line"), std::string::npos) << q.err;
}

// The limit itself is allowed: exactly n words are one record.
TEST(ScoreLimits, LineAtTheTokenLimitIsScored) {
  // A million words through the LSTM take two minutes under ASan and seconds in the Release build, which
  // checks the boundary; the sanitizers see the same code on every shorter line of the suite.
  if (lstmlm::test::kAsan) GTEST_SKIP() << "a million-token line: checked by the Release build";
  const size_t n = lstmlm::tasks::kMaxLineTokens;
  std::string in;
  in.reserve(5 * n + 1);
  for (size_t i = 0; i < n; ++i) in += "king ";
  auto r = run_cli_to("score " + bundled_dir("fairytales-word") + " -v sentence --no-eos", Stdout::File,
                      in + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  // eos is the start token, so every word is scored.
  EXPECT_NE(r.out.find("tokens=1048576 "), std::string::npos) << r.out;
}
