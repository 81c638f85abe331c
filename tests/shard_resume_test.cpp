// tasks::shard_ranges against the definition (a line is in the shard holding its first byte, the files
// taken as one input cut at floor(k * S / N)), worked out here by brute force over every line; and
// tasks::ResumeDir: a block stored is read back, another run's manifest is refused, a half-stored block is
// not finished.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/resume.hpp"
#include "lstmlm/tasks/shard.hpp"
#include "test_util.hpp"

namespace {

using lstmlm::tasks::FileRange;
using lstmlm::tasks::Shard;

std::string write(const lstmlm::test::TempDir& dir, const std::string& name, const std::string& text) {
  const auto p = (dir / name).string();
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

struct Line {
  size_t file;
  uint64_t begin;   // in the file
  uint64_t global;  // in the concatenated input
};

// Every line's first byte: after a "\n" or at a file's start, and not at a file's end.
std::vector<Line> lines_of(const std::vector<std::string>& texts) {
  std::vector<Line> out;
  uint64_t base = 0;
  for (size_t f = 0; f < texts.size(); base += texts[f].size(), ++f)
    for (uint64_t i = 0; i < texts[f].size(); ++i)
      if (i == 0 || texts[f][i - 1] == '\n') out.push_back({f, i, base + i});
  return out;
}

// The lines the ranges cover, by their first byte.
std::vector<std::pair<size_t, uint64_t>> covered(const std::vector<FileRange>& ranges,
                                                 const std::vector<std::string>& texts) {
  std::vector<std::pair<size_t, uint64_t>> out;
  for (const auto& r : ranges) {
    EXPECT_LT(r.begin, r.end);
    EXPECT_TRUE(r.begin == 0 || texts[r.file][r.begin - 1] == '\n') << "a range starts inside a line";
    EXPECT_TRUE(r.end == texts[r.file].size() || texts[r.file][r.end - 1] == '\n') << "ends inside a line";
    for (uint64_t i = r.begin; i < r.end; ++i)
      if (i == r.begin || texts[r.file][i - 1] == '\n') out.emplace_back(r.file, i);
  }
  return out;
}

TEST(Shard, EveryLineInTheShardHoldingItsFirstByte) {
  lstmlm::test::TempDir dir("shard");
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<std::string> texts, paths;
    const int files = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < files; ++f) {
      std::string t;
      const int n = static_cast<int>(rng() % 12);  // some files empty
      for (int l = 0; l < n; ++l) {
        t += std::string(rng() % 30, 'a' + static_cast<char>(l % 26));  // empty lines too
        t += rng() % 5 == 0 ? "\r\n" : "\n";
      }
      if (rng() % 3 == 0) t += "no final line end";
      texts.push_back(t);
      paths.push_back(write(dir, std::to_string(trial) + "_" + std::to_string(f), t));
    }
    uint64_t total = 0;
    for (const auto& t : texts) total += t.size();
    const auto all = lines_of(texts);
    for (uint32_t n : {1u, 2u, 3u, 7u, 50u}) {
      std::vector<std::pair<size_t, uint64_t>> seen;
      for (uint32_t k = 1; k <= n; ++k) {
        const auto got = covered(lstmlm::tasks::shard_ranges(paths, Shard{k, n}), texts);
        std::vector<std::pair<size_t, uint64_t>> want;
        for (const auto& l : all)
          if (l.global >= total * (k - 1) / n && l.global < total * k / n) want.emplace_back(l.file, l.begin);
        EXPECT_EQ(got, want) << "trial " << trial << ", shard " << k << "/" << n;
        seen.insert(seen.end(), got.begin(), got.end());
      }
      EXPECT_EQ(seen.size(), all.size()) << "the shards together are the input, each line once";
    }
  }
}

TEST(Shard, LinesBeforeCountsLineEnds) {
  lstmlm::test::TempDir dir("shard_lines");
  const auto p = write(dir, "f", "a\nbb\n\nccc\nd");
  EXPECT_EQ(lstmlm::tasks::lines_before(p, 0), 0u);
  EXPECT_EQ(lstmlm::tasks::lines_before(p, 2), 1u);
  EXPECT_EQ(lstmlm::tasks::lines_before(p, 6), 3u);
  EXPECT_EQ(lstmlm::tasks::lines_before(p, 100), 4u);
}

TEST(Shard, BadSpecificationsAndInputsAreRefused) {
  for (const char* bad :
       {"", "1", "0/3", "4/3", "1/0", "a/b", "1/3x", "-1/3", "1/1000001", "1//3", "2/3/4"}) {
    try {
      lstmlm::tasks::parse_shard(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const lstmlm::UsageError& e) {
      EXPECT_EQ(e.key(), "shard");
      EXPECT_NE(e.message().find("K/N"), std::string::npos) << e.message();
    }
  }
  const auto s = lstmlm::tasks::parse_shard("2/5");
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 5u);
  EXPECT_THROW(lstmlm::tasks::shard_ranges({"-"}, s), lstmlm::UsageError);
  EXPECT_THROW(lstmlm::tasks::shard_ranges({"/dev/null"}, s), lstmlm::UsageError);  // not a regular file
  EXPECT_THROW(lstmlm::tasks::shard_ranges({"/nonexistent/x"}, s), lstmlm::InputError);
}

TEST(ResumeDir, BlocksComeBackAndAnotherRunIsRefused) {
  lstmlm::test::TempDir dir("resume");
  const std::string d = (dir / "run").string();
  const nlohmann::json manifest = {{"inputs", {"a", "b"}}, {"shard", "1/2"}};
  {
    lstmlm::tasks::ResumeDir r(d, manifest);
    EXPECT_FALSE(r.finished("00000-1"));
    r.commit("00000-1", std::string("x\0y\n", 4), {{"documents", 2}});
  }
  lstmlm::tasks::ResumeDir again(d, manifest);
  const auto b = again.finished("00000-1");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->output, std::string("x\0y\n", 4));
  EXPECT_EQ(b->record["documents"], 2);
  EXPECT_FALSE(again.finished("00000-2"));
  EXPECT_THROW(again.finished("../x"), lstmlm::UsageError);

  // A killed run's output renamed but its marker not yet written: the block is not finished.
  std::ofstream(dir / "run" / "00000-2.out") << "partial";
  EXPECT_FALSE(again.finished("00000-2"));
  // A marker whose output is gone: said, not taken as an empty block.
  std::ofstream(dir / "run" / "00000-3.done") << "{}";
  EXPECT_THROW(again.finished("00000-3"), lstmlm::InputError);

  try {
    lstmlm::tasks::ResumeDir other(d, {{"inputs", {"a", "b"}}, {"shard", "2/2"}});
    ADD_FAILURE() << "another run's manifest accepted";
  } catch (const lstmlm::UsageError& e) {
    EXPECT_NE(e.message().find("'shard'"), std::string::npos) << e.message();
  }
  std::ofstream(dir / "file") << "x";
  EXPECT_THROW(lstmlm::tasks::ResumeDir((dir / "file").string(), manifest), lstmlm::UsageError);
}

}  // namespace
