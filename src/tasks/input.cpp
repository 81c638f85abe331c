#include "lstmlm/tasks/input.hpp"

#include <charconv>

#include "format/json_util.hpp"
#include "lstmlm/error.hpp"
#include "model/unicode.hpp"

namespace lstmlm::tasks {

namespace {

// True when lowercasing (Python's str.lower()) changes s: it holds an uppercase (or titlecase) letter.
bool has_upper(std::string_view s) {
  size_t bad = 0;
  auto u = model::decode_utf8(s, &bad);
  return u && model::lowercase(*u) != *u;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' || c == '\n'; }

std::vector<Token> parse_ids(const Model& model, std::string_view text, const LineRef& where) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    if (j == i) break;
    std::string_view piece = text.substr(i, j - i);
    int64_t id = -1;
    auto [p, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), id);
    if (ec != std::errc() || p != piece.data() + piece.size() || id < 0 || id >= model.vocab_size())
      throw where.error("token id '" + std::string(piece) + "' is not an integer in [0, " +
                        std::to_string(model.vocab_size()) + ")");
    if (out.size() == kMaxLineTokens) throw where.error(Tokenizer::too_many_tokens(kMaxLineTokens));
    Token t;
    t.id = static_cast<int32_t>(id);
    t.text = model.vocab().token(t.id);
    out.push_back(std::move(t));
    i = j;
  }
  return out;
}

}  // namespace

std::vector<Token> read_tokens(const Model& model, std::string_view text, bool ids_input, OovPolicy policy,
                               const LineRef& where) {
  if (ids_input) return parse_ids(model, text, where);
  std::vector<Token> toks;
  try {
    toks = model.tokenizer().tokenize(text, kMaxLineTokens);
  } catch (const InputError& e) {
    throw where.error(e.message());
  }
  if (policy == OovPolicy::Error)
    for (const auto& t : toks)
      if (t.id < 0)
        throw where.error(
            "'" + t.text +
            "' is not in the vocabulary and the model has no unk_token (--oov skip skips such words)" +
            oov_hint(model, t.text));
  return toks;
}

std::string oov_hint(const Model& model, const std::string& word) {
  if (model.tokenizer().unk_id() || model.config().tokenizer.lowercase || !has_upper(word)) return "";
  for (const auto& t : model.vocab().tokens())
    if (has_upper(t)) return "";
  return "; the vocabulary is lowercase-only: reconvert with lstmlm-convert --lowercase";
}

std::string read_small_file(const std::string& path, uint64_t max_bytes) {
  try {
    return format::read_file(path, max_bytes);
  } catch (const ModelError& e) {
    throw InputError(e.what());
  }
}

int32_t start_token(const Tokenizer& tok) {
  if (tok.bos_id()) return *tok.bos_id();
  if (tok.eos_id()) return *tok.eos_id();
  return -1;
}

}  // namespace lstmlm::tasks
