// A precompiled_charsmap (sentencepiece normalizer.cc, 0.1.97 to 0.2.0) is a little-endian uint32 trie
// size, a darts-clone double-array trie of 4-byte units, then the replacement strings, each ending in NUL.
// Normalizer::NormalizePrefix runs darts-clone's commonPrefixSearch over the text with no bounds check at
// all, so every read it can make is checked here instead, for every node a text can reach (any bytes):
//   - the trie size is a whole number of units and lies inside the blob;
//   - from node i a lookup reads unit base(i) ^ b for the next byte b, any of 256 values: the whole block
//     of 256 units around base(i) lies inside the trie (this covers the root, unit 0, too);
//   - a node with a leaf reads its value at base(node): an offset into the strings with a NUL after it;
//   - NormalizePrefix keeps 32 matches on its stack but reads as many as the trie yields, so no path
//     yields more than 32, and no path loops (a loop through a leaf would yield as many as the text is long).
#include "model/sentencepiece_charsmap.hpp"

#include <cstdint>
#include <vector>

#include "lstmlm/error.hpp"

namespace lstmlm::model {

namespace {

constexpr size_t kMaxMatches = 32;  // Normalizer::kMaxTrieResultsSize
// Real tables (nfkc, nmt_nfkc, their _cf forms) have 44k units; the check costs 256 steps per reachable
// unit, so this bounds a crafted table's check to about a second (a 16 MiB one took 4 s).
constexpr size_t kMaxUnits = size_t{1} << 20;

uint32_t le32(std::string_view s, size_t at) {
  const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(s[at + i])); };
  return b(0) | b(1) << 8 | b(2) << 16 | b(3) << 24;
}

// darts-clone's DoubleArrayUnit, read the way its search functions read it.
class Trie {
 public:
  explicit Trie(std::string_view units) : units_(units) {}
  size_t size() const { return units_.size() / 4; }
  uint32_t unit(size_t i) const { return le32(units_, 4 * i); }
  size_t base(size_t i) const { return i ^ offset(unit(i)); }
  static uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1U << 9)) >> 6); }
  static bool has_leaf(uint32_t u) { return (u >> 8 & 1) != 0; }
  static uint32_t label(uint32_t u) { return u & (1U << 31 | 0xFF); }  // a leaf's has the top bit: no byte
  static uint32_t value(uint32_t u) { return u & ((1U << 31) - 1); }

 private:
  std::string_view units_;
};

std::string check_trie(const Trie& trie, std::string_view strings) {
  const size_t n = trie.size();
  if (n < 256) return "a trie of " + std::to_string(n) + " units, less than the root's block of 256";
  // A replacement is read from its offset up to a NUL: any offset up to the last NUL ends inside.
  const size_t last_nul = strings.rfind('\0');
  enum : uint8_t { kUnseen, kOnPath, kDone };
  std::vector<uint8_t> state(n, kUnseen);
  std::vector<uint8_t> matches(n, 0);  // the most matches a lookup still yields once at node i
  struct Frame {
    size_t node;
    uint32_t next_byte;
  };
  std::vector<Frame> path;  // depth-first, without recursion: a crafted trie can be millions of units deep
  const auto enter = [&](size_t i) {
    const size_t block = trie.base(i) & ~size_t{0xFF};
    if (block + 256 > n)
      return "node " + std::to_string(i) + " leads to units " + std::to_string(block) + ".." +
             std::to_string(block + 255) + ", past the trie's " + std::to_string(n);
    state[i] = kOnPath;
    path.push_back({i, 0});
    return std::string();
  };
  const auto join = [&](size_t parent, size_t child) {
    const size_t m = (Trie::has_leaf(trie.unit(child)) ? 1 : 0) + matches[child];
    if (m > kMaxMatches)
      return "a text can match " + std::to_string(m) + " prefixes at once, more than SentencePiece's " +
             std::to_string(kMaxMatches);
    if (m > matches[parent]) matches[parent] = static_cast<uint8_t>(m);
    return std::string();
  };
  if (auto p = enter(0); !p.empty()) return p;
  while (!path.empty()) {
    const size_t i = path.back().node;
    const uint32_t byte = path.back().next_byte++;
    if (byte == 256) {
      state[i] = kDone;
      path.pop_back();
      if (!path.empty())
        if (auto p = join(path.back().node, i); !p.empty()) return p;
      continue;
    }
    const size_t child = trie.base(i) ^ byte;
    const uint32_t u = trie.unit(child);
    if (Trie::label(u) != byte) continue;  // no edge on this byte: the lookup stops here
    if (state[child] == kOnPath) return "node " + std::to_string(child) + " is reached again below itself";
    if (state[child] == kDone) {
      if (auto p = join(i, child); !p.empty()) return p;
      continue;
    }
    if (auto p = enter(child); !p.empty()) return p;
    if (!Trie::has_leaf(u)) continue;
    const size_t value = Trie::value(trie.unit(trie.base(child)));
    if (last_nul == std::string_view::npos || value > last_nul)
      return "node " + std::to_string(child) + "'s replacement at byte " + std::to_string(value) +
             " has no NUL before the end of the " + std::to_string(strings.size()) + " bytes of strings";
  }
  return {};
}

// A protobuf message's fields in order. The fields of an unknown group are skipped as protobuf skips them:
// they are not the message's own.
class Fields {
 public:
  struct Field {
    uint64_t number = 0;
    uint32_t wire_type = 0;
    std::string_view bytes;  // a length-delimited field's contents
  };
  Fields(std::string_view data, const std::string& path) : data_(data), path_(path) {}

  bool next(Field& f) {
    while (at_ < data_.size()) {
      const uint64_t tag = varint();
      f = {tag >> 3, static_cast<uint32_t>(tag & 7), {}};
      if (f.number == 0) damaged("a field number 0");
      if (f.wire_type == 0) {
        varint();
      } else if (f.wire_type == 1 || f.wire_type == 5) {
        skip(f.wire_type == 1 ? 8 : 4);
      } else if (f.wire_type == 2) {
        const uint64_t length = varint();
        skip(length);
        f.bytes = data_.substr(at_ - length, length);
      } else if (f.wire_type == 3) {
        ++group_depth_;
        continue;
      } else if (f.wire_type == 4) {
        if (group_depth_ == 0) damaged("the end of a group never started");
        --group_depth_;
        continue;
      } else {
        damaged("wire type " + std::to_string(f.wire_type));
      }
      if (group_depth_ == 0) return true;
    }
    if (group_depth_ > 0) damaged("a group without its end");
    return false;
  }

 private:
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (at_ == data_.size()) damaged("a number cut short");
      const auto b = static_cast<unsigned char>(data_[at_++]);
      v |= shift < 64 ? static_cast<uint64_t>(b & 0x7F) << shift : 0;
      if (b < 0x80) return v;
    }
    damaged("a number longer than 10 bytes");
  }
  void skip(uint64_t n) {
    if (n > data_.size() - at_) damaged("a field of " + std::to_string(n) + " bytes past the end");
    at_ += n;
  }
  [[noreturn]] void damaged(const std::string& what) const {
    throw ModelError(path_, "not a SentencePiece model (a damaged protobuf: " + what + ")");
  }

  std::string_view data_;
  const std::string& path_;
  size_t at_ = 0;
  int group_depth_ = 0;
};

}  // namespace

std::string charsmap_problem(std::string_view blob) {
  if (blob.size() < 4) return "a table of " + std::to_string(blob.size()) + " bytes, without its trie size";
  const uint32_t trie_bytes = le32(blob, 0);
  if (trie_bytes % 4 != 0)
    return "a trie of " + std::to_string(trie_bytes) + " bytes, not whole 4-byte units";
  if (trie_bytes > blob.size() - 4)
    return "a trie of " + std::to_string(trie_bytes) + " bytes in a table of " + std::to_string(blob.size());
  if (trie_bytes / 4 > kMaxUnits)
    return "a trie of " + std::to_string(trie_bytes / 4) + " units, more than " + std::to_string(kMaxUnits);
  return check_trie(Trie(blob.substr(4, trie_bytes)), blob.substr(4 + trie_bytes));
}

void check_normalizer_tables(std::string_view proto, const std::string& path) {
  // ModelProto fields 3 and 5 (normalizer_spec, denormalizer_spec), NormalizerSpec field 2
  // (precompiled_charsmap). Protobuf merges a message field given twice, keeping the last value of each of
  // its fields: every table given is checked, so none can hide behind another.
  Fields model(proto, path);
  for (Fields::Field f; model.next(f);) {
    if ((f.number != 3 && f.number != 5) || f.wire_type != 2) continue;
    Fields spec(f.bytes, path);
    for (Fields::Field g; spec.next(g);) {
      if (g.number != 2 || g.wire_type != 2 || g.bytes.empty()) continue;  // an empty table is no table
      if (const std::string p = charsmap_problem(g.bytes); !p.empty())
        throw ModelError(path, std::string(f.number == 3 ? "normalizer" : "denormalizer") +
                                   "_spec.precompiled_charsmap: " + p +
                                   " (a damaged or crafted normalizer table, which SentencePiece would read "
                                   "outside of)");
    }
  }
}

}  // namespace lstmlm::model
