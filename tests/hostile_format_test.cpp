// Resource bounds of the model readers: headers and configs that claim astronomic sizes are refused with
// a message naming the file and field, before anything of that size is allocated (memory-capped runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "hostile_util.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/safetensors.hpp"
#include "model_files.hpp"

using lstmlm::test::safetensors_bytes;
using lstmlm::test::TempDir;

namespace {

// SafetensorsFile::open on `bytes`; returns the ModelError message ("" when it was accepted).
std::string open_error(const TempDir& dir, const std::string& bytes) {
  auto p = dir / "weights.safetensors";
  std::ofstream(p, std::ios::binary) << bytes;
  try {
    lstmlm::SafetensorsFile::open(p.string());
  } catch (const lstmlm::ModelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(HostileFormat, HeaderLengthOf2To60IsRefusedBeforeReading) {
  TempDir dir("hostile_hdr");
  std::string bytes(8, '\0');
  bytes[7] = 0x10;  // little-endian 2^60
  bytes += "{}";
  std::string e = open_error(dir, bytes);
  EXPECT_NE(e.find("weights.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("header length 1152921504606846976"), std::string::npos) << e;
}

TEST(HostileFormat, TensorClaiming2To60BytesIsRefused) {
  TempDir dir("hostile_big");
  // 2^58 floats = 2^60 bytes, offsets consistent with the shape, data section of 16 bytes.
  std::string h =
      R"({"w":{"dtype":"F32","shape":[288230376151711744],"data_offsets":[0,1152921504606846976]}})";
  std::string e = open_error(dir, safetensors_bytes(h, std::string(16, '\0')));
  EXPECT_NE(e.find("tensor 'w'"), std::string::npos) << e;
  EXPECT_NE(e.find("run past the end of the data section"), std::string::npos) << e;
}

TEST(HostileFormat, ShapeProductsThatOverflowInt64AreRefused) {
  TempDir dir("hostile_shape");
  // 2^32 * 2^32 = 2^64 wraps to 0 in uint64: a reader that multiplies unchecked would accept [0, 0).
  for (std::string shape :
       {"[4294967296,4294967296]", "[4294967296,4294967296,0,4]", "[9223372036854775807,3]",
        "[3037000500,3037000500,2]", "[4611686018427387904]"}) {
    std::string h = R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,0]}})";
    std::string e = open_error(dir, safetensors_bytes(h, ""));
    // [.., 0, ..] holds 0 elements: the product is 0 whatever the other dims, and 0 bytes match [0, 0).
    if (shape.find(",0,") != std::string::npos) continue;
    EXPECT_NE(e, "") << shape << " accepted";
    EXPECT_NE(e.find("tensor 'w'"), std::string::npos) << shape << ": " << e;
  }
  for (std::string shape : {"[-1]", "[1.5]", "[18446744073709551616]"}) {
    std::string h = R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,4]}})";
    std::string e = open_error(dir, safetensors_bytes(h, std::string(4, '\0')));
    EXPECT_NE(e.find("shape"), std::string::npos) << shape << ": " << e;
  }
}

// config.json says vocab_size 10^9 over a real small model: refused naming the field, never an attempt
// to allocate V-sized tables (the run is capped at 512 MiB; a 10^9 x E float table would be gigabytes).
TEST(HostileFormat, VocabSizeOf1e9IsRefusedUnderAMemoryCap) {
  TempDir dir("hostile_vocab");
  auto m = lstmlm::Model::random(20, 4, 8, 1, 5);
  auto files = lstmlm::test::files_of(*m);
  files.config["vocab_size"] = 1000000000;
  files.write(dir.path());
  auto r = lstmlm::test::run_cli_to("info -m '" + dir.path().string() + "'", lstmlm::test::Stdout::File, "",
                                    lstmlm::test::memory_cap(512));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("lstmlm: error: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("out of memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(dir.path().string()), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// The same with weights that agree with the 10^9 claim in the header but not in size: the header's
// shapes pass the config check, the data section is missing.
TEST(HostileFormat, WeightsClaimingAVocabOf1e9AreRefusedUnderAMemoryCap) {
  TempDir dir("hostile_vocab_w");
  auto m = lstmlm::Model::random(20, 4, 8, 1, 5);
  auto files = lstmlm::test::files_of(*m);
  files.config["vocab_size"] = 1000000000;
  nlohmann::json h = {
      {"embedding.weight",
       {{"dtype", "F32"}, {"shape", {1000000000, 4}}, {"data_offsets", {0, 16000000000ull}}}}};
  files.weights = safetensors_bytes(h.dump(), std::string(64, '\0'));
  files.write(dir.path());
  auto r = lstmlm::test::run_cli_to("info -m '" + dir.path().string() + "'", lstmlm::test::Stdout::File, "",
                                    lstmlm::test::memory_cap(512));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.find("out of memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(dir.path().string()), std::string::npos) << r.err;
}
