// The model files' JSON and the weights file under attack: nesting that would overflow the stack, bytes
// hidden after a NUL, files far larger than any model needs, and a weights file cut while it is read.
// The first three run through the CLI, so a crash shows as a signal status instead of killing the tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "hostile_util.hpp"
#include "lstmlm/config.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/safetensors.hpp"
#include "model_files.hpp"

using lstmlm::test::files_of;
using lstmlm::test::ModelFiles;
using lstmlm::test::TempDir;

namespace {

ModelFiles small_random_files() { return files_of(*lstmlm::Model::random(12, 4, 6, 1, 3)); }

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// The safetensors bytes of `f` with `extra` spliced into the JSON header (before its closing brace).
std::string header_with(const ModelFiles& f, const std::string& extra) {
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i)
    len = (len << 8) | static_cast<unsigned char>(f.weights[static_cast<size_t>(i)]);
  std::string header = f.weights.substr(8, len), data = f.weights.substr(8 + len);
  header.erase(header.find_last_not_of(' ') + 1);  // the writer's alignment padding
  header.insert(header.size() - 1, extra);
  return lstmlm::test::safetensors_bytes(header, data);
}

// `info` on the directory: the status, and stderr's one line when it failed.
lstmlm::test::CliResult info(const TempDir& dir) {
  return lstmlm::test::run_cli_to("info -m '" + dir.path().string() + "'", lstmlm::test::Stdout::File, "",
                                  lstmlm::test::memory_cap(1024));
}

void expect_refused(const lstmlm::test::CliResult& r, const std::string& file, const std::string& what) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("lstmlm: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
}

}  // namespace

// 10^6 levels is a 2 MB file: before the depth limit, the DOM's destructor and the value printed in
// messages recursed per level and overflowed the stack (SIGSEGV) in all three files.
TEST(HostileJson, DeepNestingInEveryJsonFileIsOneLineError) {
  for (size_t depth : {size_t{65}, size_t{100000}, size_t{1000000}}) {
    SCOPED_TRACE(depth);
    {
      TempDir dir("deep_cfg");
      auto f = small_random_files();
      f.config.erase("source");
      f.config_text = f.config.dump();
      f.config_text.insert(f.config_text.size() - 1, ",\"source\":{\"x\":" + nested(depth) + "}");
      f.write(dir.path());
      expect_refused(info(dir), "config.json", "nested deeper than 64 levels");
    }
    {
      TempDir dir("deep_vocab");
      auto f = small_random_files();
      f.vocab = nested(depth);
      f.write(dir.path());
      expect_refused(info(dir), "vocab.json", "nested deeper than 64 levels");
    }
    {
      TempDir dir("deep_st");
      auto f = small_random_files();
      f.weights = header_with(f, ",\"__metadata__\":" + nested(depth));
      f.write(dir.path());
      expect_refused(info(dir), "weights.safetensors", "header: JSON nested deeper than 64 levels");
    }
  }
}

// The limit itself is allowed: root object, "source", "x" and 62 arrays make 64 levels.
TEST(HostileJson, NestingAtTheLimitLoads) {
  TempDir dir("deep_ok");
  auto f = small_random_files();
  f.config.erase("source");
  f.config_text = f.config.dump();
  f.config_text.insert(f.config_text.size() - 1,
                       ",\"source\":{\"x\":" + nested(static_cast<size_t>(lstmlm::kMaxJsonDepth) - 2) + "}");
  f.write(dir.path());
  auto r = info(dir);
  EXPECT_EQ(r.status, 0) << r.err;
}

// nlohmann's iterator input ends at a NUL, so `{...}\0<payload>` used to load and ignore the payload.
TEST(HostileJson, BytesAfterANulAreRefusedInEveryJsonFile) {
  const std::string tail = std::string("\0", 1) + "{\"payload\": 1}";
  {
    TempDir dir("nul_cfg");
    auto f = small_random_files();
    f.config_text = f.config.dump() + tail;
    f.write(dir.path());
    expect_refused(info(dir), "config.json", "a NUL byte at offset");
  }
  {
    TempDir dir("nul_vocab");
    auto f = small_random_files();
    f.vocab += tail;
    f.write(dir.path());
    expect_refused(info(dir), "vocab.json", "a NUL byte at offset");
  }
  {
    TempDir dir("nul_st");
    auto f = small_random_files();
    // A NUL inside the header, after its last key, hiding bytes the reader would never look at.
    f.weights = header_with(f, std::string(" \0 \"hidden\": 1", 14));
    f.write(dir.path());
    expect_refused(info(dir), "weights.safetensors", "a NUL byte at offset");
  }
}

// A sparse file: 17 MiB on paper, nothing on disk. Its size is refused before a byte is read.
TEST(HostileJson, JsonFilesAboveTheirSizeLimitAreRefusedBeforeReading) {
  TempDir dir("big_cfg");
  auto f = small_random_files();
  f.write(dir.path());
  std::filesystem::resize_file(dir.path() / "config.json", lstmlm::kMaxConfigBytes + 1);
  expect_refused(info(dir), "config.json", "more than the limit of 16777216 bytes");
}

// The weights file cut after the header was read: with the old mapping, the copy raised SIGBUS; a read
// comes back short and is an error naming the file and the tensor.
TEST(HostileJson, WeightsTruncatedWhileLoadingIsAnError) {
  TempDir dir("cut_st");
  auto f = small_random_files();
  f.write(dir.path());
  auto path = (dir.path() / "weights.safetensors").string();
  auto st = lstmlm::SafetensorsFile::open(path);
  std::filesystem::resize_file(path, 16);
  const auto& t = st.tensors().back();
  try {
    st.read_f32(t);
    FAIL() << "read a tensor of a truncated file";
  } catch (const lstmlm::ModelError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("shrank while it was read"), std::string::npos) << m;
    EXPECT_NE(m.find(t.name), std::string::npos) << m;
  }
}
