#include <gtest/gtest.h>

#include "lstmlm/vocab.hpp"
#include "test_util.hpp"

TEST(Vocab, FirstIdWinsOnDuplicates) {
  lstmlm::Vocab v({"a", "b", "a"});
  EXPECT_EQ(v.size(), 3);
  EXPECT_EQ(v.find("a"), 0);
  EXPECT_EQ(v.find("b"), 1);
  EXPECT_FALSE(v.find("c").has_value());
}

TEST(Cli, UnknownSubcommandIsUsageError) {
  auto r = lstmlm::test::run_cli("no-such-command");
  EXPECT_EQ(r.status, 2) << r.err;
}
