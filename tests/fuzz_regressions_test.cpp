// Replays the committed fuzz inputs (fuzz/corpus/<target>/ seeds and fuzz/regressions/<target>/, inputs
// that once crashed a target) through the same property checks as the libFuzzer targets, so that the
// normal and sanitizer builds guard every past finding without clang.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "../fuzz/check_arpa.hpp"
#include "../fuzz/check_charsmap.hpp"
#include "../fuzz/check_config.hpp"
#include "../fuzz/check_jsonl.hpp"
#include "../fuzz/check_lattice.hpp"
#include "../fuzz/check_request.hpp"
#include "../fuzz/check_safetensors.hpp"
#include "../fuzz/check_score_line.hpp"
#include "../fuzz/check_stream.hpp"
#include "../fuzz/check_structured.hpp"
#include "../fuzz/check_tokenizer.hpp"
#include "../fuzz/check_vocab.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

using Check = std::function<void(const uint8_t*, size_t)>;

// Every file of fuzz/corpus/<target> and fuzz/regressions/<target>; returns how many were replayed.
int replay(const std::string& target, const Check& check) {
  int n = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    fs::path dir = lstmlm::test::source_dir() / "fuzz" / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      std::ifstream f(e.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      SCOPED_TRACE(e.path().string());
      EXPECT_NO_THROW(check(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
      ++n;
    }
  }
  return n;
}

}  // namespace

TEST(FuzzRegressions, Tokenizer) { EXPECT_GT(replay("tokenizer", lstmlm::fuzz::check_tokenizer), 10); }
TEST(FuzzRegressions, ScoreLine) { EXPECT_GT(replay("score_line", lstmlm::fuzz::check_score_line), 10); }
TEST(FuzzRegressions, Safetensors) { EXPECT_GE(replay("safetensors", lstmlm::fuzz::check_safetensors), 3); }
TEST(FuzzRegressions, Config) { EXPECT_GE(replay("config", lstmlm::fuzz::check_config), 3); }
TEST(FuzzRegressions, Vocab) { EXPECT_GE(replay("vocab", lstmlm::fuzz::check_vocab), 3); }
TEST(FuzzRegressions, Jsonl) { EXPECT_GE(replay("jsonl", lstmlm::fuzz::check_jsonl), 4); }
TEST(FuzzRegressions, Arpa) { EXPECT_GE(replay("arpa", lstmlm::fuzz::check_arpa), 3); }
TEST(FuzzRegressions, Stream) { EXPECT_GE(replay("stream", lstmlm::fuzz::check_stream), 3); }
TEST(FuzzRegressions, Request) { EXPECT_GE(replay("request", lstmlm::fuzz::check_request), 4); }
TEST(FuzzRegressions, Structured) { EXPECT_GE(replay("structured", lstmlm::fuzz::check_structured), 6); }
TEST(FuzzRegressions, Lattice) { EXPECT_GE(replay("lattice", lstmlm::fuzz::check_lattice), 4); }
TEST(FuzzRegressions, Charsmap) { EXPECT_GE(replay("charsmap", lstmlm::fuzz::check_charsmap), 3); }
