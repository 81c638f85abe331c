// A hand-built model whose log-probabilities can be written down by hand (used by score/predict tests).
//
// V = 3 tokens {"a", "b", "</s>"}, one-hot input (embedding_dim 0), one LSTM layer with H = 1,
// W_hh = 0, bias i = +100, f = -100, o = +100 (so i = o = 1, f = 0 in float: sigmoid(-100) ~ 4e-44),
// and the g row of W_ih = [0, +1, -1] for a, b, </s>. So c' = tanh(g) and h' = tanh(tanh(g)): the state
// depends only on the previous token (the model is memoryless):
//   after a:    h = 0
//   after b:    h = +t,   t = tanh(tanh(1)) = 0.642014...
//   after </s>: h = -t
// Decoder W = [1, 0, 0]^T, bias 0: logits = [h, 0, 0], so
//   p(. | a)    = (1/3, 1/3, 1/3)
//   p(. | b)    = (e^t, 1, 1) / (e^t + 2)
//   p(. | </s>) = (e^-t, 1, 1) / (e^-t + 2)
#pragma once
#include <cmath>
#include <memory>

#include "lstmlm/model.hpp"

namespace lstmlm::test {

// `char_newline`: the same weights as a char model whose third token is "\n" (vocabulary {"a", "b", "\n"}),
// the shape of a char-rnn (the formulas below hold with "\n" for </s>); eos_token, if any, is then "b".
inline std::shared_ptr<const Model> micro_model(bool with_eos = true, bool with_unk = false,
                                                bool char_newline = false) {
  ModelConfig c;
  c.vocab_size = 3;
  c.embedding_dim = 0;
  c.layers.push_back(LayerConfig{1, 0, RecurrentActivation::Sigmoid, {}});
  if (char_newline) c.tokenizer.type = TokenizerType::Char;
  if (with_eos) c.tokenizer.eos_token = char_newline ? "b" : "</s>";
  if (with_unk) c.tokenizer.unk_token = "b";  // a stand-in unk: every OOV word is scored as "b"
  c.tokenizer.pad_id = 0;
  Weights w;
  LayerWeights l;
  l.w_ih = MatrixRM::Zero(4, 3);
  l.w_ih(2, 1) = 1.0f;   // g row, token b
  l.w_ih(2, 2) = -1.0f;  // g row, token </s>
  l.w_hh = MatrixRM::Zero(4, 1);
  l.bias = Eigen::VectorXf::Zero(4);
  l.bias << 100.0f, -100.0f, 0.0f, 100.0f;
  w.layers.push_back(l);
  w.decoder = MatrixRM::Zero(3, 1);
  w.decoder(0, 0) = 1.0f;
  w.decoder_bias = Eigen::VectorXf::Zero(3);
  return Model::create(c, Vocab({"a", "b", char_newline ? "\n" : "</s>"}), w);
}

// The token ids: "a", "b", and the third token ("</s>", or "\n" as a char model).
inline constexpr int A = 0, B = 1, E = 2, NL = 2;

// ln p(target | previous token) of the micro model, in double, from the formulas above.
inline double micro_logprob(int prev, int target) {
  const double t = std::tanh(std::tanh(1.0));
  double h = prev == 0 ? 0.0 : (prev == 1 ? t : -t);
  double z = std::exp(h) + 2.0;
  return (target == 0 ? h : 0.0) - std::log(z);
}

}  // namespace lstmlm::test
