#include "lstmlm/tasks/ngram_generate.hpp"

#include <cmath>
#include <limits>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/limits.hpp"
#include "lstmlm/tasks/ngram_score.hpp"
#include "lstmlm/tasks/sampler.hpp"
#include "lstmlm/text.hpp"
#include "lstmlm/tokenizer.hpp"
#include "lstmlm/units.hpp"

namespace lstmlm::tasks {

GenerateResult generate_ngram(const NgramModel& m, const GenerateOptions& o, const TokenCallback& on_token) {
  o.validate();
  auto refuse = [](const char* key, const char* what) {
    throw UsageError::option(key, std::string(": an n-gram model ") + what);
  };
  if (o.window.windowed()) refuse("pad_to", "has no fixed input window");
  if (o.boost) refuse("boost", "is not boosted (a boost file is read for a neural model's vocabulary)");
  if (o.mix) refuse("mix", "is mixed into a neural model, not the other way round");
  const Sampler sampler(o.sampler);
  const bool stop = o.stop_at_eos.value_or(true);
  for (size_t b = 0; b < o.prompt.size();) {
    const size_t n = utf8_sequence_length(o.prompt, b);
    if (n == 0) throw InputError("prompt: invalid UTF-8 at byte " + std::to_string(b + 1));
    b += n;
  }
  GenerateResult r;
  NgramState start = m.begin_sentence();
  r.prompt.context.push_back(static_cast<int32_t>(m.bos()));
  const auto words = ngram_words(o.prompt);
  if (words.size() > kMaxLineTokens)
    throw InputError("prompt: " + Tokenizer::too_many_tokens(kMaxLineTokens));
  if (o.budget) o.budget->take(words.size());
  for (const auto& w : words) {
    const auto id = m.find(w);
    if (!id && o.oov == OovPolicy::Error)
      throw InputError("prompt: '" + printable(w, 80) +
                       "' is not among the n-gram model's unigrams (--oov error)");
    const uint32_t fed = id.value_or(m.unk());
    m.score(start, fed, start);
    r.prompt.context.push_back(static_cast<int32_t>(fed));
    r.prompt.tokens.push_back(Token{static_cast<int32_t>(fed), w, !id});
  }
  const auto V = m.vocab_size();
  std::vector<float> row(V);
  const auto K = static_cast<size_t>(o.num_samples);
  r.samples.resize(K);
  for (size_t i = 0; i < K; ++i) {
    GeneratedSample& s = r.samples[i];
    s.index = static_cast<int>(i);
    Rng rng = Rng::stream(o.seed, i);
    NgramState state = start;
    std::vector<int32_t> history;  // the repeat penalty's: the prompt's words, then the sample's
    for (const auto& t : r.prompt.tokens) history.push_back(t.id);
    for (int step = 0; step < o.max_tokens; ++step) {
      for (uint32_t w = 0; w < V; ++w)
        row[w] = w == m.bos() ? -std::numeric_limits<float>::infinity()
                              : static_cast<float>(m.score(state, w).log10prob * kLn10);
      const int32_t id = sampler.sample(row, history, rng);
      GeneratedToken t{id, row[static_cast<size_t>(id)]};
      s.tokens.push_back(t);
      s.total_logprob += t.logprob;
      history.push_back(id);
      if (on_token) on_token(static_cast<int>(i), t);
      if (stop && static_cast<uint32_t>(id) == m.eos()) {
        s.stopped_at_eos = true;
        break;
      }
      m.score(state, static_cast<uint32_t>(id), state);
    }
  }
  return r;
}

std::string NgramTextJoin::piece(int32_t id) {
  if (static_cast<uint32_t>(id) == model_->eos()) return "";  // as a neural model's special tokens
  std::string out = first_ ? "" : " ";
  first_ = false;
  return out + model_->word(static_cast<uint32_t>(id));
}

}  // namespace lstmlm::tasks
