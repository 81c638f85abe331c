// Tokenizer::detokenize / is_special: words joined by single spaces, characters concatenated, the
// boundary tokens (eos, bos, pad) never printed as text, unk printed as its vocabulary string.
#include <gtest/gtest.h>

#include <vector>

#include "lstmlm/error.hpp"
#include "lstmlm/tokenizer.hpp"

namespace {

using lstmlm::Tokenizer;
using lstmlm::TokenizerConfig;
using lstmlm::TokenizerType;
using lstmlm::Vocab;

TEST(Detokenize, WordModelsJoinWordsWithSpacesDropBoundariesKeepUnk) {
  Vocab v({"<pad>", "<unk>", "<eos>", "<s>", "the", "cat", "sat"});
  TokenizerConfig c;
  c.type = TokenizerType::Word;
  c.unk_token = "<unk>";
  c.eos_token = "<eos>";
  c.bos_token = "<s>";
  c.pad_id = 0;
  auto t_ptr = Tokenizer::create(c, v);
  const Tokenizer& t = *t_ptr;
  std::vector<int32_t> ids = {3, 4, 5, 1, 6, 2, 0};
  EXPECT_EQ(t.detokenize(ids), "the cat <unk> sat");
  for (int32_t id : {0, 2, 3}) EXPECT_TRUE(t.is_special(id)) << id;
  for (int32_t id : {1, 4, 5, 6}) EXPECT_FALSE(t.is_special(id)) << id;
  EXPECT_EQ(t.detokenize(std::vector<int32_t>{}), "");
  EXPECT_EQ(t.detokenize(std::vector<int32_t>{2, 2}), "");
}

TEST(Detokenize, CharModelsConcatenateIncludingSpacesAndNewlines) {
  Vocab v({"a", " ", "\n", "é", "<eos>"});
  TokenizerConfig c;
  c.type = TokenizerType::Char;
  c.eos_token = "<eos>";
  auto t_ptr = Tokenizer::create(c, v);
  const Tokenizer& t = *t_ptr;
  std::vector<int32_t> ids = {0, 1, 3, 2, 4, 0};
  EXPECT_EQ(t.detokenize(ids), "a é\na");
  EXPECT_FALSE(t.is_special(1));
  EXPECT_TRUE(t.is_special(4));
}

TEST(Detokenize, WithoutSpecialTokensNothingIsSpecial) {
  Vocab v({"x", "y"});
  auto t_ptr = Tokenizer::create(TokenizerConfig{}, v);
  const Tokenizer& t = *t_ptr;
  EXPECT_FALSE(t.is_special(0));
  EXPECT_FALSE(t.is_special(1));
  EXPECT_EQ(t.detokenize(std::vector<int32_t>{1, 0}), "y x");
}

TEST(Detokenize, RejectsIdsOutsideTheVocabulary) {
  Vocab v({"x"});
  auto t_ptr = Tokenizer::create(TokenizerConfig{}, v);
  const Tokenizer& t = *t_ptr;
  EXPECT_THROW(t.detokenize(std::vector<int32_t>{1}), lstmlm::InputError);
  EXPECT_THROW(t.detokenize(std::vector<int32_t>{-1}), lstmlm::InputError);
}

}  // namespace
