// Any byte string as one line to score, on a tiny random word model: an InputError (invalid UTF-8) or
// one finite ln p <= 0 per token of [eos] + line + [eos], i.e. nothing lost and nothing undefined.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "check.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"

namespace lstmlm::fuzz {

namespace score_detail {
inline std::shared_ptr<const Model> model() {
  // Random weights of a tiny shape, with a real word vocabulary so that inputs hit known words too.
  Vocab v({"<unk>", "<eos>", "the", "a", "é", "日本", "ß", "x", "de", "la"});
  auto r = Model::random(v.size(), 4, 8, 2, 7);
  ModelConfig c = r->config();
  c.tokenizer.type = TokenizerType::Word;
  c.tokenizer.lowercase = true;
  c.tokenizer.filters = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n";
  c.tokenizer.unk_token = "<unk>";
  c.tokenizer.eos_token = "<eos>";
  return Model::create(c, v, r->weights());
}
}  // namespace score_detail

inline void check_score_line(const uint8_t* data, size_t size) {
  static const auto m = score_detail::model();
  static Engine engine(m, 1);
  std::string_view line(reinterpret_cast<const char*>(data), size);
  std::vector<Token> toks;
  try {
    toks = m->tokenizer().tokenize(line);
  } catch (const InputError&) {
    return;
  }
  const int32_t eos = *m->tokenizer().eos_id();
  Sequences in(1), tgt(1);
  in[0].push_back(eos);
  for (const auto& t : toks) {
    require(t.id >= 0 && t.id < m->vocab_size(), "score: token id out of range with an unk token");
    in[0].push_back(t.id);
    tgt[0].push_back(t.id);
  }
  tgt[0].push_back(eos);
  in[0].resize(tgt[0].size());
  std::vector<State> states{State::zeros(*m)};
  std::vector<std::vector<float>> out;
  engine.score(in, tgt, states, out);
  require(out.size() == 1 && out[0].size() == tgt[0].size(), "score: not one ln p per token");
  for (float lp : out[0]) require(std::isfinite(lp) && lp <= 1e-6f, "score: ln p not finite or > 0");
}

}  // namespace lstmlm::fuzz
