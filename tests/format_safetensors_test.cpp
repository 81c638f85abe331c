// The safetensors reader: widening of F16/BF16 (values derived by hand from the bit patterns),
// unaligned offsets, the writer round trip, and the header checks that are easiest to state directly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "lstmlm/error.hpp"
#include "lstmlm/safetensors.hpp"
#include "model_files.hpp"

namespace fs = std::filesystem;
using lstmlm::ModelError;
using lstmlm::SafetensorsFile;
using lstmlm::test::safetensors_bytes;

namespace {

std::string u16_bytes(std::initializer_list<uint16_t> v) {
  std::string s;
  for (uint16_t x : v) {
    s += static_cast<char>(x & 0xff);
    s += static_cast<char>(x >> 8);
  }
  return s;
}

fs::path put_temp(const std::string& name, const std::string& bytes) {
  static lstmlm::test::TempDir dir("st");
  fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::string open_error(const std::string& bytes) {
  fs::path p = put_temp("bad.safetensors", bytes);
  try {
    SafetensorsFile::open(p.string());
  } catch (const ModelError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Safetensors, F16WidenedExactly) {
  // half bits -> value: sign | 5-bit exponent (bias 15) | 10-bit mantissa.
  // 0x3C00 = 2^0 = 1; 0xC000 = -2^1 = -2; 0x3555 = 2^-2 * (1 + 341/1024) = 0.333251953125;
  // 0x7BFF = 2^15 * (1 + 1023/1024) = 65504 (largest half); 0x0001 = 2^-24 (smallest subnormal);
  // 0x8000 = -0; 0x7C00 = +inf; 0xFC00 = -inf; 0x7E00 = quiet NaN.
  std::string data = u16_bytes({0x3C00, 0xC000, 0x3555, 0x7BFF, 0x0001, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0});
  auto p = put_temp("f16.safetensors",
                    safetensors_bytes(R"({"h":{"dtype":"F16","shape":[2,5],"data_offsets":[0,20]}})", data));
  auto st = SafetensorsFile::open(p.string());
  ASSERT_EQ(st.tensors().size(), 1u);
  EXPECT_EQ(st.tensors()[0].shape, (std::vector<int64_t>{2, 5}));
  auto v = st.read_f32(*st.find("h"));
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 0.333251953125f);
  EXPECT_EQ(v[3], 65504.0f);
  EXPECT_EQ(v[4], std::ldexp(1.0f, -24));
  EXPECT_EQ(v[5], 0.0f);
  EXPECT_TRUE(std::signbit(v[5]));
  EXPECT_EQ(v[6], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[7], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(v[8]));
  EXPECT_EQ(v[9], 0.0f);
}

TEST(Safetensors, F16SubnormalsWidenedExactly) {
  // 0x03FF = 1023 * 2^-24 (largest subnormal); 0x8200 = -(512 * 2^-24) = -2^-15.
  auto p = put_temp("f16s.safetensors",
                    safetensors_bytes(R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})",
                                      u16_bytes({0x03FF, 0x8200})));
  auto st = SafetensorsFile::open(p.string());
  auto v = st.read_f32(st.tensors()[0]);
  EXPECT_EQ(v[0], 1023.0f * std::ldexp(1.0f, -24));
  EXPECT_EQ(v[1], -std::ldexp(1.0f, -15));
}

TEST(Safetensors, BF16WidenedExactly) {
  // bf16 is the top 16 bits of a float: 0x3F80 -> 0x3F800000 = 1; 0xC0A0 -> -(2^2 * 1.25) = -5;
  // 0x3EAB -> 2^-2 * (1 + 43/128) = 0.333984375; 0x7F80 -> +inf.
  auto p = put_temp("bf16.safetensors",
                    safetensors_bytes(R"({"b":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})",
                                      u16_bytes({0x3F80, 0xC0A0, 0x3EAB, 0x7F80})));
  auto st = SafetensorsFile::open(p.string());
  auto v = st.read_f32(st.tensors()[0]);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -5.0f);
  EXPECT_EQ(v[2], 0.333984375f);
  EXPECT_EQ(v[3], std::numeric_limits<float>::infinity());
}

TEST(Safetensors, F32AtUnalignedOffsetReadsCorrectly) {
  // A 1-element F16 tensor puts the F32 tensor at offset 2 of the data section: not float-aligned.
  std::string data = u16_bytes({0x3C00}) + lstmlm::test::f32_bytes({1.5f, -0.25f});
  auto p = put_temp("unaligned.safetensors",
                    safetensors_bytes(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},)"
                                      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[2,10]}})",
                                      data));
  auto st = SafetensorsFile::open(p.string());
  auto v = st.read_f32(*st.find("b"));
  EXPECT_EQ(v, (std::vector<float>{1.5f, -0.25f}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % alignof(float), 0u);
}

TEST(Safetensors, WriterRoundTripKeepsNamesShapesValuesAndMetadataIsAccepted) {
  auto p = put_temp("rt.safetensors", "");
  lstmlm::write_safetensors(p.string(),
                            {{"x", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"empty", {0, 4}, {}}, {"s", {}, {7}}});
  auto st = SafetensorsFile::open(p.string());
  ASSERT_EQ(st.tensors().size(), 3u);
  EXPECT_EQ(st.find("x")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(st.read_f32(*st.find("x")), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(st.read_f32(*st.find("empty")).empty());
  EXPECT_EQ(st.read_f32(*st.find("s")), std::vector<float>{7});  // a scalar: shape [] holds one value
  EXPECT_EQ(st.find("nope"), nullptr);
  // The data section starts 8-byte aligned (header padded), like the Python writer's files.
  EXPECT_EQ(fs::file_size(p) % 4, 0u);

  auto q =
      put_temp("meta.safetensors",
               safetensors_bytes(
                   R"({"__metadata__":{"format":"pt"},"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                   lstmlm::test::f32_bytes({3})));
  auto st2 = SafetensorsFile::open(q.string());
  EXPECT_EQ(st2.tensors().size(), 1u);
}

TEST(Safetensors, WriterRefusesValueCountMismatch) {
  auto p = put_temp("w.safetensors", "");
  EXPECT_THROW(lstmlm::write_safetensors(p.string(), {{"x", {2, 3}, {1, 2}}}), lstmlm::UsageError);
}

TEST(Safetensors, ShapeProductOverflowIsRefused) {
  // 2^32 * 2^32 = 2^64 wraps to 0 in uint64; it must not be mistaken for an empty tensor.
  EXPECT_NE(
      open_error(safetensors_bytes(
                     R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", ""))
          .find("too large"),
      std::string::npos);
}

TEST(Safetensors, EmptyTensorsDoNotCountAsOverlap) {
  auto p = put_temp("empty2.safetensors",
                    safetensors_bytes(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                                      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                      lstmlm::test::f32_bytes({1, 2})));
  EXPECT_NO_THROW(SafetensorsFile::open(p.string()));
}

TEST(Safetensors, HeaderErrorsNameTheFileAndTheTensor) {
  std::string e = open_error(safetensors_bytes(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                               lstmlm::test::f32_bytes({1, 2})));
  EXPECT_NE(e.find("bad.safetensors: tensor 't': shape [3] x F32 needs 12 bytes"), std::string::npos) << e;
  e = open_error(safetensors_bytes(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", ""));
  EXPECT_NE(e.find("expected a non-negative integer, found -1"), std::string::npos) << e;
  e = open_error(safetensors_bytes(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})",
                                   lstmlm::test::f32_bytes({1})));
  EXPECT_NE(e.find("unknown field 'x'"), std::string::npos) << e;
}
