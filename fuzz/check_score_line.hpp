// Any byte string as lines to score (split at '\n', as the CLI reads them), through the score task on a
// tiny random word model, in sentence and document mode: an InputError (invalid UTF-8) or exactly one
// record per line, in order, each scored ln p finite and <= 0: nothing lost, nothing undefined.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "lstmlm/engine.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/score.hpp"

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

inline void check_lines(tasks::Scorer& scorer, const std::vector<std::string>& lines) {
  std::vector<tasks::LineScore> got;
  try {
    got = scorer.score(lines, "fuzz", 1);
  } catch (const InputError&) {
    return;
  }
  require(got.size() == lines.size(), "score: not one record per line");
  for (size_t i = 0; i < got.size(); ++i) {
    require(got[i].line == i + 1, "score: records out of order");
    int64_t scored = 0;
    for (const auto& w : got[i].words) {
      if (!w.scored) continue;
      ++scored;
      require(std::isfinite(w.logprob) && w.logprob <= 1e-6f, "score: ln p not finite or > 0");
    }
    require(scored == got[i].tokens, "score: token count differs from the scored words");
    require(std::isfinite(got[i].logprob), "score: line total not finite");
  }
}
}  // namespace score_detail

inline void check_score_line(const uint8_t* data, size_t size) {
  using namespace score_detail;
  static const auto m = model();
  static Engine engine(m, 1);
  static tasks::Scorer sentences(engine, {});
  // Document mode carries its state across inputs, as across the lines of a long document.
  static tasks::Scorer document(engine, {.context = tasks::ContextMode::Document});
  std::vector<std::string> lines(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n')
      lines.emplace_back();
    else
      lines.back().push_back(static_cast<char>(data[i]));
  }
  check_lines(sentences, lines);
  check_lines(document, lines);
}

}  // namespace lstmlm::fuzz
