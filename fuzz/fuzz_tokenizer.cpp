// Any byte string as a line of text, through a word and a char tokenizer: an InputError (invalid
// UTF-8) or tokens whose ids are in range and whose texts are non-empty.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lstmlm/error.hpp"
#include "lstmlm/tokenizer.hpp"

namespace {
const lstmlm::Vocab& vocab() {
  static const lstmlm::Vocab v({"<pad>", "<unk>", "<eos>", "the", "é", "a", " ", "\n", "ß", "日本"});
  return v;
}
lstmlm::TokenizerConfig config(lstmlm::TokenizerType type) {
  lstmlm::TokenizerConfig c;
  c.type = type;
  c.lowercase = true;
  c.filters = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n«»";
  c.unk_token = type == lstmlm::TokenizerType::Word ? std::optional<std::string>("<unk>") : std::nullopt;
  c.eos_token = "<eos>";
  c.pad_id = 0;
  return c;
}
void check(const lstmlm::Tokenizer& t, std::string_view line) {
  try {
    for (const auto& tok : t.tokenize(line)) {
      if (tok.id < -1 || tok.id >= vocab().size() || tok.text.empty()) std::abort();
      if (tok.id == -1 && !tok.oov) std::abort();
    }
  } catch (const lstmlm::InputError&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const lstmlm::Tokenizer word(config(lstmlm::TokenizerType::Word), vocab());
  static const lstmlm::Tokenizer chars(config(lstmlm::TokenizerType::Char), vocab());
  std::string_view line(reinterpret_cast<const char*>(data), size);
  check(word, line);
  check(chars, line);
  return 0;
}
