// SentencePiece models (BPE and unigram): the .model file named by tokenizer.model, read from the model
// directory with Debian's libsentencepiece, whose normalization and segmentation are the reference (pieces
// and ids equal spm_encode's). vocab.json must be the model's pieces, id for id. A line is checked as UTF-8
// (and lowercased when the config says so) first, as for every kind; an id is OOV when it is the model's
// unknown piece. Pieces detokenize as SentencePiece decodes them ("\u2581" becomes a space, none leads).
// A build without the library (LSTMLM_NO_SENTENCEPIECE: WebAssembly) refuses such models.
#include "lstmlm/error.hpp"
#include "model/tokenizers.hpp"

#ifdef LSTMLM_NO_SENTENCEPIECE
namespace lstmlm::model {

std::unique_ptr<const Tokenizer> sentencepiece_tokenizer(const TokenizerConfig&, const Vocab&,
                                                         const std::string& config_file, const std::string&) {
  throw ModelError::about(config_file, "tokenizer.type",
                          "tokenizer.type \"sentencepiece\" needs the SentencePiece library, which this "
                          "build (WebAssembly) does not have");
}

}  // namespace lstmlm::model
#else
#include <sentencepiece_processor.h>

#include <filesystem>
#include <optional>

#include "format/json_util.hpp"
#include "model/sentencepiece_charsmap.hpp"
#include "model/unicode.hpp"

namespace lstmlm::model {

namespace {

// Far above any real SentencePiece model (a 256k-piece model is about 5 MB).
constexpr size_t kMaxSentencePieceBytes = size_t{256} << 20;
constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary

// config.json names a plain file name (format/config.cpp); a symbolic link by that name may still lead
// out of the directory, which a model never reads from (the converters refuse such links too).
void check_inside(const std::string& model_dir, const std::string& path, const std::string& config_file) {
  namespace fs = std::filesystem;
  std::error_code e1, e2;
  const fs::path dir = fs::weakly_canonical(fs::absolute(model_dir), e1);
  const fs::path real = fs::weakly_canonical(fs::absolute(path), e2);
  const fs::path rel = real.lexically_relative(dir);
  if (e1 || e2 || rel.empty() || *rel.begin() == "..")
    throw ModelError::about(config_file, "tokenizer.model",
                            path + " leads outside the model directory (a symbolic link to " +
                                format::quoted(real.string()) +
                                "): a model reads only its own files; copy the file into the directory");
}

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(const TokenizerConfig& config, const Vocab& vocab, const std::string& config_file,
                         const std::string& model_dir)
      : Tokenizer(config, vocab, config_file) {
    if (model_dir.empty())
      throw ModelError::about(config_file, "tokenizer.model",
                              "a sentencepiece tokenizer reads its .model file from a model directory");
    const std::string path = (std::filesystem::path(model_dir) / config.model_file).string();
    check_inside(model_dir, path, config_file);
    const std::string bytes = format::read_file(path, kMaxSentencePieceBytes);
    check_normalizer_tables(bytes, path);  // the library trusts them, and would crash on a text
    if (auto s = sp_.LoadFromSerializedProto(bytes); !s.ok())
      throw ModelError(path, "not a SentencePiece model (" + s.ToString() + ")");
    if (sp_.GetPieceSize() != vocab.size())
      throw ModelError::about(config_file, "tokenizer.model",
                              path + " has " + std::to_string(sp_.GetPieceSize()) +
                                  " pieces where vocab.json has " + std::to_string(vocab.size()) + " tokens");
    for (int32_t id = 0; id < vocab.size(); ++id)
      if (sp_.IdToPiece(id) != vocab.token(id))
        throw ModelError::about(config_file, "tokenizer.model",
                                path + ": piece " + std::to_string(id) + " is not vocab.json's token " +
                                    std::to_string(id) +
                                    ": the vocabulary must be the model's pieces, id for id");
  }

  std::vector<Token> tokenize(std::string_view line, size_t max_tokens) const override {
    const std::u32string text = decode(line);  // UTF-8 checked (and lowercased) as for every kind
    // The pieces as spm_encode --output_format=piece prints them: an unknown piece is its surface text.
    sentencepiece::ImmutableSentencePieceText spt;
    if (auto s = sp_.Encode(config().lowercase ? encode_utf8(text) : std::string(line), spt.mutable_proto());
        !s.ok())
      throw InputError("SentencePiece could not encode the line (" + s.ToString() + ")");
    if (spt.pieces_size() > max_tokens) throw InputError(too_many_tokens(max_tokens));
    std::vector<Token> out(spt.pieces_size());
    for (size_t i = 0; i < out.size(); ++i) {
      const auto p = spt.pieces(static_cast<int>(i));
      out[i].id = static_cast<int32_t>(p.id());
      out[i].text = p.piece();
      out[i].oov = sp_.IsUnknown(out[i].id);
    }
    return out;
  }

  std::string detokenize(std::span<const int32_t> ids) const override {
    std::vector<int> kept;
    for (int32_t id : ids) {
      check_id(id);
      if (!is_special(id)) kept.push_back(id);
    }
    std::string out;
    if (auto s = sp_.Decode(kept, &out); !s.ok())
      throw InputError("SentencePiece could not decode the ids (" + s.ToString() + ")");
    return out;
  }

  std::string join_text(std::optional<std::string_view> prev, std::string_view piece) const override {
    std::string text;
    const int id = sp_.PieceToId(piece);
    if (sp_.IdToPiece(id) == piece && sp_.IsControl(id)) return text;
    if (sp_.IdToPiece(id) == piece && sp_.IsByte(id) && piece.size() == 6) {
      // A byte piece "<0xHH>" is its raw byte: a character split into byte pieces is whole again once its
      // pieces are joined (decoding one byte alone would give U+FFFD).
      const auto hex = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
      text.push_back(static_cast<char>(hex(piece[3]) * 16 + hex(piece[4])));
      return text;
    }
    text = piece;
    for (size_t at; (at = text.find(kWordStart)) != std::string::npos;)
      text.replace(at, kWordStart.size(), " ");
    if (!prev && text.starts_with(' ')) text.erase(0, 1);
    return text;
  }

 private:
  sentencepiece::SentencePieceProcessor sp_;  // Encode/Decode are const and thread-safe
};

}  // namespace

std::unique_ptr<const Tokenizer> sentencepiece_tokenizer(const TokenizerConfig& config, const Vocab& vocab,
                                                         const std::string& config_file,
                                                         const std::string& model_dir) {
  return std::make_unique<SentencePieceTokenizer>(config, vocab, config_file, model_dir);
}

}  // namespace lstmlm::model
#endif
