// The n-best JSONL reader (rescore --input-format jsonl, the server's /v1/rescore): a NUL byte anywhere is
// refused, as the JSONL filter refuses it, so no bytes after one are ignored.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/nbest.hpp"

namespace {

TEST(NbestJsonl, ANulByteIsRefusedNotCut) {
  using namespace lstmlm;
  std::optional<std::vector<std::string>> names;
  tasks::Hypothesis h;
  const std::string good = R"({"utt": "u", "hyp": "the old man"})";
  EXPECT_NO_THROW(tasks::parse_jsonl_hypothesis(good, names, "-:1: ", h));
  EXPECT_EQ(h.text, "the old man");
  const std::string tail = good + std::string(1, '\0') + R"({"utt": "v"})";
  try {
    tasks::parse_jsonl_hypothesis(tail, names, "-:2: ", h);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.message(), "-:2: not a JSON object: a NUL byte at offset " + std::to_string(good.size()));
  }
}

}  // namespace
