// Token strings by id (vocab.json) and the reverse lookup.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
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
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ids_;
};

}  // namespace lstmlm
