// Engine options: thread counts bounded in the library, a thread that cannot be started is an error, not a
// hang (the pool used to throw from its constructor while its started workers waited on its condition
// variable, which was then destroyed under them).
#include <gtest/gtest.h>

#include <string>

#include "hostile_util.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"

using namespace lstmlm;

TEST(EngineOptions, MoreThanTheMaximumIsRefused) {
  auto m = Model::random(20, 4, 8, 1, 1);
  try {
    Engine e(m, kMaxThreads + 1);
    FAIL() << "accepted " << kMaxThreads + 1 << " threads";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(kMaxThreads)), std::string::npos) << e.what();
  }
  Engine ok(m, 3);
  EXPECT_EQ(ok.threads(), 3);
  Engine one_per_core(m, 0);
  EXPECT_GE(one_per_core.threads(), 1);
  EXPECT_LE(one_per_core.threads(), kMaxThreads);
}

// Under a 300 MB address-space cap, 256 threads of 8 MB stacks cannot all start. The command is killed
// after 60 s if the pool hangs while unwinding (exit 128 + 9).
TEST(EngineOptions, ThreadStartFailureIsAnErrorNotAHang) {
  if (test::kAsan) GTEST_SKIP() << "ASan reserves terabytes of address space; ulimit -v cannot apply";
  const auto model = test::source_dir() / "models" / "fairytales-word";
  auto r = test::run_cli_to(
      "score -m '" + model.string() + "' --threads " + std::to_string(kMaxThreads) + " --batch-size 512",
      test::Stdout::File, std::string(600, '.') + "\nthe old man\n", "ulimit -v 512000; ",
      "timeout -s KILL 60 ");
  ASSERT_NE(r.status, 128 + 9) << "hung: killed by the timeout";
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("could not start thread"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// The precision seam: a precision is a kind parsed once from its name; an unknown name is refused by name,
// not ignored.
TEST(EngineOptions, PrecisionIsChosenByNameAndUnknownOnesAreRefused) {
  auto m = Model::random(20, 4, 8, 1, 1);
  Engine fp32(m, EngineOptions{1, parse_precision("fp32")});
  EXPECT_EQ(fp32.kernels().substr(0, 5), "fp32/");
  for (Precision p : kPrecisions) EXPECT_EQ(parse_precision(precision_name(p)), p);
  try {
    Engine e(m, EngineOptions{1, parse_precision("int3")});
    FAIL() << "accepted precision int3";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'int3'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp32"), std::string::npos) << e.what();
  }
}

// A random model (bench --shape) is held to the loader's limits before anything is allocated: H = 2^30
// used to overflow 4*H in int.
TEST(EngineOptions, RandomModelShapeIsBoundedLikeTheLoader) {
  EXPECT_THROW(Model::random(10, 4, 1 << 30, 1, 1), UsageError);
  EXPECT_THROW(Model::random(10, 4, static_cast<int>(kMaxLayerWidth) + 1, 1, 1), UsageError);
  EXPECT_THROW(Model::random(static_cast<int>(kMaxVocabSize) + 1, 4, 8, 1, 1), UsageError);
  EXPECT_THROW(Model::random(10, -1, 8, 1, 1), UsageError);
  EXPECT_THROW(Model::random(10, 4, 8, static_cast<int>(kMaxLayerCount) + 1, 1), UsageError);
  EXPECT_NO_THROW(Model::random(10, 0, 8, 2, 1));
}
