// SentencePiece normalizer tables (precompiled_charsmap) damaged or crafted so that libsentencepiece would
// read outside them: refused when the tokenizer is loaded, in one line naming the file. The tables are
// edited from the real nfkc table of Google's test models in ../shared/data; the first one crashes
// spm_encode and lstmlm's own score before the check (tests/py/fidelity/test_sentencepiece_charsmap.py).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "lstmlm/error.hpp"
#include "lstmlm/tokenizer.hpp"
#include "lstmlm/vocab.hpp"
#include "test_util.hpp"

namespace lstmlm::spm_charsmap_test {

// The protobuf wire format, as far as a ModelProto's top-level and NormalizerSpec fields need it.
struct PbField {
  uint32_t number;
  uint32_t wire_type;
  uint64_t value;     // a varint field's value
  std::string bytes;  // a length-delimited field's contents, a fixed-size one's bytes
};

uint64_t read_varint(const std::string& s, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto b = static_cast<unsigned char>(s.at(at++));
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (b < 0x80) return v;
  }
}

std::string varint(uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s.push_back(static_cast<char>(v | 0x80));
  s.push_back(static_cast<char>(v));
  return s;
}

std::vector<PbField> pb_fields(const std::string& s) {
  std::vector<PbField> out;
  for (size_t at = 0; at < s.size();) {
    const uint64_t tag = read_varint(s, at);
    PbField f{static_cast<uint32_t>(tag >> 3), static_cast<uint32_t>(tag & 7), 0, {}};
    if (f.wire_type == 0) {
      f.value = read_varint(s, at);
    } else if (f.wire_type == 2 || f.wire_type == 1 || f.wire_type == 5) {
      const size_t n = f.wire_type == 2 ? read_varint(s, at) : f.wire_type == 1 ? 8 : 4;
      f.bytes = s.substr(at, n);
      at += n;
    } else {
      ADD_FAILURE() << "wire type " << f.wire_type << " in a test model";
      return out;
    }
    out.push_back(f);
  }
  return out;
}

std::string pb_bytes(uint32_t number, const std::string& bytes) {
  return varint(number << 3 | 2) + varint(bytes.size()) + bytes;
}

std::string pb_write(const std::vector<PbField>& fields) {
  std::string s;
  for (const auto& f : fields)
    s += f.wire_type == 0   ? varint(f.number << 3) + varint(f.value)
         : f.wire_type == 2 ? pb_bytes(f.number, f.bytes)
                            : varint(f.number << 3 | f.wire_type) + f.bytes;
  return s;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

std::filesystem::path botchan(const char* name = "test_model.model") {
  return test::shared_data() / "spm-google-test-model-botchan" / name;
}

// The model's pieces, id for id: what vocab.json must hold.
Vocab pieces_of(const std::string& proto) {
  std::vector<std::string> tokens;
  for (const auto& f : pb_fields(proto))
    if (f.number == 1)
      for (const auto& g : pb_fields(f.bytes))
        if (g.number == 1) tokens.push_back(g.bytes);
  return Vocab(tokens);
}

// The normalizer_spec's precompiled_charsmap.
std::string charsmap_of(const std::string& proto) {
  for (const auto& f : pb_fields(proto))
    if (f.number == 3)
      for (const auto& g : pb_fields(f.bytes))
        if (g.number == 2) return g.bytes;
  return {};
}

// `proto` with its normalizer_spec's table replaced by `table`, and field `spec` (3, or 5 for the
// denormalizer_spec) given `table` too when it is not 3.
std::string with_charsmap(const std::string& proto, const std::string& table, uint32_t spec = 3) {
  std::vector<PbField> fields = pb_fields(proto);
  for (auto& f : fields) {
    if (f.number != 3 || spec != 3) continue;
    std::vector<PbField> inner = pb_fields(f.bytes);
    for (auto& g : inner)
      if (g.number == 2) g.bytes = table;
    f.bytes = pb_write(inner);
  }
  if (spec != 3) fields.push_back({spec, 2, 0, pb_bytes(1, "crafted") + pb_bytes(2, table)});
  return pb_write(fields);
}

// A table as darts-clone units and the strings after them.
struct Table {
  std::vector<uint32_t> units;
  std::string strings;

  explicit Table(const std::string& blob) {
    const uint32_t n = u32(blob, 0);
    for (size_t i = 0; i < n / 4; ++i) units.push_back(u32(blob, 4 + 4 * i));
    strings = blob.substr(4 + n);
  }
  Table(std::vector<uint32_t> u, std::string s) : units(std::move(u)), strings(std::move(s)) {}
  static uint32_t u32(const std::string& s, size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(s.at(at + static_cast<size_t>(i)));
    return v;
  }
  static std::string le(uint32_t v) {
    std::string s;
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
    return s;
  }
  std::string blob(uint32_t trie_bytes) const {
    std::string s = le(trie_bytes);
    for (uint32_t u : units) s += le(u);
    return s + strings;
  }
  std::string blob() const { return blob(static_cast<uint32_t>(4 * units.size())); }

  static uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1U << 9)) >> 6); }
  size_t base(size_t i) const { return i ^ offset(units.at(i)); }
  // The node a lookup reaches from `node` on `byte`, as darts-clone's commonPrefixSearch finds it.
  size_t child(size_t node, unsigned char byte) const {
    const size_t c = base(node) ^ byte;
    EXPECT_EQ(units.at(c) & 0x800000FFU, byte) << "no edge on byte " << int{byte} << " from node " << node;
    return c;
  }
  size_t walk(const std::string& text) const {
    size_t node = 0;
    for (char ch : text) node = child(node, static_cast<unsigned char>(ch));
    return node;
  }
};

// A unit with the given offset from its own index (darts-clone's encoding: shifted by 8 when large).
uint32_t with_offset(uint32_t unit, uint32_t offset) {
  unit &= 0x1FF;  // keeps the label and the leaf bit
  return offset < (1U << 21) ? unit | offset << 10 : unit | (offset >> 8) << 10 | 1U << 9;
}

class SentencePieceCharsmap : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(botchan())) GTEST_SKIP() << botchan() << " absent (../shared/data)";
    proto_ = slurp(botchan());
    table_ = charsmap_of(proto_);
    ASSERT_GT(table_.size(), 4U);
  }

  // Loads `proto` as a model directory's tokenizer.model; the load's ModelError text, "" when it loads.
  std::string load_error(const std::string& proto, std::string_view text = "Ｈｅｌｌｏ world") {
    const test::TempDir dir("spm_charsmap");
    std::ofstream(dir.path() / "tokenizer.model", std::ios::binary) << proto;
    TokenizerConfig c;
    c.type = TokenizerType::SentencePiece;
    c.model_file = "tokenizer.model";
    c.unk_token = "<unk>";
    try {
      const auto t = Tokenizer::create(c, pieces_of(proto_), "config.json", dir.path().string());
      // A crafted table that was let through crashes here, in libsentencepiece.
      EXPECT_FALSE(t->tokenize(text).empty());
      return {};
    } catch (const ModelError& e) {
      EXPECT_EQ(e.text().find('\n'), std::string::npos) << e.text();
      EXPECT_NE(e.text().find("tokenizer.model: "), std::string::npos) << e.text();
      return e.text();
    }
  }

  std::string proto_, table_;
};

TEST_F(SentencePieceCharsmap, RealModelsLoadAndNormalize) {
  EXPECT_EQ(load_error(proto_), "");
  const std::string ja = slurp(botchan("test_ja_model.model"));
  EXPECT_EQ(charsmap_of(ja), table_);  // both nfkc: the same table
  // The table's own edits are kept: an edited table that is still sound loads.
  Table t(table_);
  t.strings += std::string("spare\0", 6);
  EXPECT_EQ(load_error(with_charsmap(proto_, t.blob())), "");
}

// The root's children are searched a gigabyte past the table: spm_encode dies of SIGSEGV on any text.
TEST_F(SentencePieceCharsmap, CrashingTableIsRefused) {
  Table t(table_);
  t.units[0] = with_offset(t.units[0], 0x3FFFFF00);
  const std::string e = load_error(with_charsmap(proto_, t.blob()));
  EXPECT_NE(e.find("tokenizer.model: normalizer_spec.precompiled_charsmap: node 0 leads to units "
                   "1073741568..1073741823, past the trie's 44288 (a damaged or crafted normalizer table"),
            std::string::npos)
      << e;
  // The same table as the denormalizer's (read when pieces are decoded).
  const std::string d = load_error(with_charsmap(proto_, t.blob(), 5));
  EXPECT_NE(d.find("tokenizer.model: denormalizer_spec.precompiled_charsmap: node 0 leads to units"),
            std::string::npos)
      << d;
}

// Protobuf merges a normalizer_spec given twice and keeps the last table: a crafted table after a sound one
// is the one the library uses.
TEST_F(SentencePieceCharsmap, TableGivenTwiceIsCheckedEachTime) {
  Table t(table_);
  t.units[0] = with_offset(t.units[0], 0x3FFFFF00);
  const std::string twice = proto_ + pb_bytes(3, pb_bytes(2, t.blob()));
  EXPECT_NE(load_error(twice).find("normalizer_spec.precompiled_charsmap: node 0 leads to units"),
            std::string::npos);
}

TEST_F(SentencePieceCharsmap, TrieSizeBeyondTheBlobIsRefused) {
  const Table t(table_);
  const auto size = static_cast<uint32_t>(table_.size());
  EXPECT_NE(load_error(with_charsmap(proto_, t.blob(size)))
                .find("a trie of " + std::to_string(size) + " bytes in a table of " + std::to_string(size)),
            std::string::npos);
  // Three bytes past the trie: within the blob's size the library checks, but past the trie it reads.
  EXPECT_NE(load_error(with_charsmap(proto_, t.blob(size - 1))).find("not whole 4-byte units"),
            std::string::npos);
  EXPECT_NE(load_error(with_charsmap(proto_, std::string("\x10\0\0", 3))).find("without its trie size"),
            std::string::npos);
}

TEST_F(SentencePieceCharsmap, OffsetOutOfTheArrayIsRefused) {
  Table t(table_);
  const size_t node = t.walk("\xEF\xBC\xA8");  // U+FF28, fullwidth H, which nfkc maps to "H"
  t.units[node] = with_offset(t.units[node], static_cast<uint32_t>(t.units.size()) * 2);
  const std::string e = load_error(with_charsmap(proto_, t.blob()));
  EXPECT_NE(e.find("node " + std::to_string(node) + " leads to units "), std::string::npos) << e;
}

TEST_F(SentencePieceCharsmap, LeafValuePastTheStringsIsRefused) {
  Table t(table_);
  const size_t node = t.walk("\xEF\xBC\xA8");
  ASSERT_TRUE(t.units[node] >> 8 & 1) << "U+FF28 has a replacement";
  // Leaves are shared (the table is a DAWG): the first node found with this one may be another.
  t.units[t.base(node)] = 1U << 31 | static_cast<uint32_t>(t.strings.size());
  const std::string e = load_error(with_charsmap(proto_, t.blob()));
  EXPECT_NE(e.find("'s replacement at byte " + std::to_string(t.strings.size()) + " has no NUL"),
            std::string::npos)
      << e;
}

TEST_F(SentencePieceCharsmap, MissingNulIsRefused) {
  Table t(table_);
  ASSERT_EQ(t.strings.back(), '\0');
  t.strings.back() = 'x';  // the last replacement now runs off the end
  const std::string e = load_error(with_charsmap(proto_, t.blob()));
  EXPECT_NE(e.find("has no NUL before the end of the " + std::to_string(t.strings.size()) + " bytes"),
            std::string::npos)
      << e;
}

TEST_F(SentencePieceCharsmap, LoopIsRefused) {
  Table t(table_);
  const size_t node = t.walk("\xEF\xBC");
  const uint32_t label = t.units[node] & 0xFF;
  t.units[node] = label | label << 10;  // offset = label: its child on its own label is itself
  ASSERT_EQ(t.child(node, static_cast<unsigned char>(label)), node);
  const std::string e = load_error(with_charsmap(proto_, t.blob()));
  EXPECT_NE(e.find("node " + std::to_string(node) + " is reached again below itself"), std::string::npos)
      << e;
}

// A chain of nodes on "aaa...", each with a replacement: SentencePiece keeps 32 matches of a lookup on its
// stack and reads as many as the trie yields.
Table chain_of_matches(size_t length) {
  // Every unit is a leaf of value 0 ("x") until set: no edges, since a leaf's label is no byte.
  std::vector<uint32_t> units(256 * (length + 2), 1U << 31);
  units[0] = 0;
  size_t node = 0;
  for (size_t k = 1; k <= length + 1; ++k) {  // the children of node k-1 (the root first) in block k
    units[node] = with_offset(units[node], static_cast<uint32_t>(node ^ 256 * k));
    if (k == length + 1) break;
    node = 256 * k ^ 'a';
    units[node] = 'a' | 1U << 8;  // its leaf: unit 0 of its children's block
  }
  return Table(units, std::string("x\0", 2));
}

TEST_F(SentencePieceCharsmap, MoreThan32MatchesAreRefused) {
  EXPECT_EQ(load_error(with_charsmap(proto_, chain_of_matches(32).blob()), std::string(40, 'a')), "");
  const std::string e = load_error(with_charsmap(proto_, chain_of_matches(33).blob()));
  EXPECT_NE(e.find("a text can match 33 prefixes at once, more than SentencePiece's 32"), std::string::npos)
      << e;
}

// The check costs 256 steps per reachable unit: a trie of more than 2^20 units (24 times nfkc's) is refused
// before it is walked.
TEST_F(SentencePieceCharsmap, OversizedTrieIsRefused) {
  Table t(std::vector<uint32_t>((size_t{1} << 20) + 256, 1U << 31), std::string("x\0", 2));
  t.units[0] = 0;
  const std::string e = load_error(with_charsmap(proto_, t.blob()));
  EXPECT_NE(e.find("a trie of 1048832 units, more than 1048576"), std::string::npos) << e;
}

}  // namespace lstmlm::spm_charsmap_test
