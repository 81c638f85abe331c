// Token strings by id (vocab.json) and the reverse lookup.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lstmlm {

class Vocab {
 public:
  Vocab() = default;
  explicit Vocab(std::vector<std::string> tokens);  // id = index; on duplicates the first id wins

  // Reads vocab.json (a JSON array of strings); throws ModelError naming the file.
  static Vocab load(const std::string& path);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  const std::string& token(int32_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  std::optional<int32_t> find(std::string_view token) const;
  const std::vector<std::string>& tokens() const { return tokens_; }

 private:
  // Where token t's id lies: open addressing over ids by the hash of their token, linear probing, -1 empty,
  // a power of two at least 2 V slots. 4 bytes a slot where a node-based map took ~60 per token (a keyboard's
  // 10,000 words: 128 KB instead of 640), and a lookup builds no std::string.
  std::optional<int32_t> probe(std::string_view token, size_t& slot) const;
  std::vector<std::string> tokens_;
  std::vector<int32_t> slots_;
};

}  // namespace lstmlm
