// A structured generator for the model readers: the fuzz input is a short program that expands into a
// file far larger than libFuzzer's input limit (-max_len 8192), so two classes the byte-level targets
// cannot reach are fuzzed too:
//   - deep nesting: a fuzzed fragment wrapped in up to 2^20 levels of [ or {"k": (a 2-6 MB file) inside
//     config.json's `source`, a vocab.json array or the safetensors `__metadata__`;
//   - size lies: safetensors headers whose shapes, offsets and header length are fuzzed 64-bit values
//     (mixtures of small, boundary and huge) over a small data section.
// The property is the byte-level targets' one (a refusal is one short line included).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.hpp"
#include "check_config.hpp"
#include "check_safetensors.hpp"
#include "check_vocab.hpp"

namespace lstmlm::fuzz {

// Reads the program's bytes; past the end every read gives 0.
class Program {
 public:
  Program(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t byte() { return i_ < n_ ? p_[i_++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v = (v << 8) | byte();
    return v;
  }
  // A 64-bit value whose magnitude is itself fuzzed: small, near a power of two, or anything.
  uint64_t size_value() {
    uint8_t kind = byte();
    uint64_t v = u64();
    switch (kind % 4) {
      case 0:
        return v % 64;
      case 1:
        return (uint64_t{1} << (v % 64)) + (kind >> 2) - 32;  // 2^k - 32 .. 2^k + 31
      case 2:
        return v >> (kind % 64);
      default:
        return v;
    }
  }
  std::string_view rest() {
    std::string_view r(reinterpret_cast<const char*>(p_) + i_, n_ - i_);
    i_ = n_;
    return r;
  }

 private:
  const uint8_t* p_;
  size_t n_, i_ = 0;
};

inline std::string little_endian(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
  return s;
}

// `fragment` inside `depth` levels of nesting.
inline std::string nested(Program& p, std::string_view fragment) {
  size_t depth = 1 + ((size_t{p.byte()} << 16 | size_t{p.byte()} << 8 | p.byte()) % (size_t{1} << 20));
  bool objects = p.byte() & 1;
  std::string s;
  s.reserve(depth * (objects ? 6 : 2) + fragment.size());
  for (size_t i = 0; i < depth; ++i) s += objects ? "{\"k\":" : "[";
  s += fragment;
  for (size_t i = 0; i < depth; ++i) s += objects ? '}' : ']';
  return s;
}

// A valid config.json with `source` set to `value` (the one free-form field).
inline std::string config_with_source(const std::string& value) {
  return R"({"format":"lstmlm","format_version":1,"vocab_size":5,"embedding_dim":2,)"
         R"("layers":[{"hidden_size":3,"proj_size":0,"activation":"tanh","recurrent_activation":"sigmoid",)"
         R"("cell_clip":null}],"output":{"tied":false},"tokenizer":{"type":"word","lowercase":false,)"
         R"("filters":"","unk_token":null,"eos_token":null,"bos_token":null,"pad_id":null},"source":)" +
         value + "}";
}

// A safetensors file whose every size is a fuzzed claim.
inline std::string lying_safetensors(Program& p) {
  static const char* const kDtypes[] = {"F32", "F16", "BF16", "I64", "F64"};
  std::string header = "{";
  int tensors = 1 + p.byte() % 4;
  for (int t = 0; t < tensors; ++t) {
    if (t) header += ",";
    header += "\"t" + std::to_string(t) + "\":{\"dtype\":\"" + kDtypes[p.byte() % 5] + "\",\"shape\":[";
    int rank = p.byte() % 4;
    for (int d = 0; d < rank; ++d) header += (d ? "," : "") + std::to_string(p.size_value());
    header +=
        "],\"data_offsets\":[" + std::to_string(p.size_value()) + "," + std::to_string(p.size_value()) + "]}";
  }
  header += "}";
  std::string data(p.byte() % 128, '\x3f');
  uint8_t lie = p.byte();
  uint64_t header_len = lie % 4 == 0 ? p.size_value() : header.size();
  return little_endian(header_len) + header + data;
}

inline void check_structured(const uint8_t* data, size_t size) {
  Program p(data, size);
  uint8_t what = p.byte();
  std::string file;
  switch (what % 4) {
    case 0:
      file = config_with_source(nested(p, p.rest()));
      break;
    case 1:
      file = "[\"a\"," + nested(p, p.rest()) + "]";
      break;
    case 2: {
      std::string header = "{\"__metadata__\":" + nested(p, p.rest()) + "}";
      file = little_endian(header.size()) + header;
      break;
    }
    default:
      file = lying_safetensors(p);
      break;
  }
  // The byte-level properties, short refusals included (check.hpp).
  const auto* bytes = reinterpret_cast<const uint8_t*>(file.data());
  switch (what % 4) {
    case 0:
      check_config(bytes, file.size());
      break;
    case 1:
      check_vocab(bytes, file.size());
      break;
    default:
      check_safetensors(bytes, file.size());
      break;
  }
}

}  // namespace lstmlm::fuzz
