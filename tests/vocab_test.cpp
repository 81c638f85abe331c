// Vocab's reverse lookup (open addressing): every token finds its id, a duplicate its first id, anything
// else nothing, also where the probe chains wrap around the table.
#include "lstmlm/vocab.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

using lstmlm::Vocab;

TEST(Vocab, FindsEveryTokenAndNothingElse) {
  std::mt19937 rng(7);
  std::vector<std::string> tokens;
  for (int i = 0; i < 5000; ++i) {
    std::string t(1 + rng() % 12, ' ');
    for (char& c : t) c = static_cast<char>('a' + rng() % 6);  // short words over few letters: many collide
    tokens.push_back(t);
  }
  tokens.push_back(std::string("nul\0inside", 10));
  tokens.push_back("");
  const Vocab v(tokens);
  ASSERT_EQ(v.size(), static_cast<int32_t>(tokens.size()));
  for (size_t i = 0; i < tokens.size(); ++i) {
    size_t first = 0;
    while (tokens[first] != tokens[i]) ++first;
    EXPECT_EQ(v.find(tokens[i]), static_cast<int32_t>(first)) << tokens[i];
  }
  EXPECT_EQ(v.find(std::string("nul", 3)), std::nullopt);
  EXPECT_EQ(v.find("g"), std::nullopt);  // a letter no token uses
  EXPECT_EQ(v.find("abcdefabcdefa"), std::nullopt);
}

TEST(Vocab, EmptyAndTiny) {
  EXPECT_EQ(Vocab().find("a"), std::nullopt);
  EXPECT_EQ(Vocab(std::vector<std::string>{}).find(""), std::nullopt);
  const Vocab one({"x"});
  EXPECT_EQ(one.find("x"), 0);
  EXPECT_EQ(one.find("y"), std::nullopt);
  const Vocab dup({"a", "a", "b"});
  EXPECT_EQ(dup.find("a"), 0);
  EXPECT_EQ(dup.find("b"), 2);
}

}  // namespace
