#!/usr/bin/env python3
"""Golden data for `generate`: small PyTorch LSTM models and their greedy continuations.

Writes tests/golden/generate_word/ and tests/golden/generate_char/, each a model directory (format v1) plus
greedy.json (not expected.json, which marks the engine's cases in tests/golden): the context fed to the model (start token + prompt ids), the greedy ids PyTorch picks (argmax
of the float64 log-softmax, stopping after eos when the model has one) and the log-probability of each.
Each step's winner must beat the runner-up by MARGIN nats, so float32 rounding in lstmlm cannot flip it.

Run with Debian's python3 (numpy + torch): /usr/bin/python3 tools/make_golden_generate.py
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
import lstmlm.format as fmt  # noqa: E402

MARGIN = 1e-3
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")


class LM(torch.nn.Module):
    def __init__(self, vocab, emb, hidden, layers):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab, emb)
        self.lstm = torch.nn.LSTM(emb, hidden, layers, batch_first=True)
        self.decoder = torch.nn.Linear(hidden, vocab)

    def forward(self, ids, state=None):
        out, state = self.lstm(self.embedding(ids), state)
        return torch.log_softmax(self.decoder(out), dim=-1), state


def greedy(model, context, max_tokens, eos_id):
    """PyTorch's greedy continuation: the whole context first, then one token at a time."""
    ids, logprobs = [], []
    with torch.no_grad():
        lp, state = model(torch.tensor([context]))
        last = lp[0, -1]
        for _ in range(max_tokens):
            top2 = torch.topk(last, 2)
            if float(top2.values[0] - top2.values[1]) < MARGIN:
                raise SystemExit("near tie at step %d: pick another seed" % len(ids))
            tok = int(top2.indices[0])
            ids.append(tok)
            logprobs.append(float(last[tok]))
            if tok == eos_id:
                break
            lp, state = model(torch.tensor([[tok]]), state)
            last = lp[0, -1]
    return ids, logprobs


def make(name, *, vocab, tokenizer, prompt, context, seed, scale, max_tokens, eos_id):
    torch.manual_seed(seed)
    model = LM(len(vocab), 16, 32, 2)
    # Weights wider than PyTorch's default init: the greedy path then wanders instead of looping at once.
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(scale)
    model = model.double()
    ids, logprobs = greedy(model, context, max_tokens, eos_id)
    tensors = {fmt.names.embedding: model.embedding.weight.detach().numpy()}
    for k in range(2):
        for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            tensors[getattr(fmt.names, kind)(k)] = getattr(model.lstm, "%s_l%d" % (kind, k)).detach().numpy()
    tensors[fmt.names.decoder_weight] = model.decoder.weight.detach().numpy()
    tensors[fmt.names.decoder_bias] = model.decoder.bias.detach().numpy()
    out = os.path.join(ROOT, name)
    fmt.write_model(out, vocab=vocab, embedding_dim=16, layers=[fmt.layer(32), fmt.layer(32)], tied=False,
                    tokenizer=tokenizer, tensors=tensors,
                    source={"framework": "pytorch", "version": torch.__version__,
                            "exporter": "tools/make_golden_generate.py", "seed": seed})
    # The float32 weights lstmlm reads must give the same choices: re-run PyTorch on the rounded weights.
    model32 = LM(len(vocab), 16, 32, 2)
    model32.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
    ids32, _ = greedy(model32.double(), context, max_tokens, eos_id)
    if ids32 != ids:
        raise SystemExit("float32 rounding changes the greedy path: pick another seed")
    expected = {"prompt": prompt, "context_ids": context, "max_tokens": max_tokens, "greedy_ids": ids,
                "logprobs": logprobs, "stopped_at_eos": bool(ids and ids[-1] == eos_id),
                "margin": MARGIN, "note": "PyTorch float64 greedy continuation; see tools/make_golden_generate.py"}
    with open(os.path.join(out, "greedy.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("%s: %d tokens%s" % (name, len(ids), " (stopped at eos)" if expected["stopped_at_eos"] else ""))


def main():
    words = ["<unk>", "<eos>", "the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat", "tree", "and",
             "big", "small", "red", "blue", "saw", "it", "was", "very", "old", "new", "house", "in", "garden",
             "bird", "sang", "slept", "ate", "fish", "happy"]
    word_vocab = {w: i for i, w in enumerate(words)}
    prompt = "the cat sat on"
    # Context: eos (the model has no bos, so the sentence starts after eos), then the prompt's words.
    context = [word_vocab["<eos>"]] + [word_vocab[w] for w in prompt.split()]
    make("generate_word", vocab=words,
         tokenizer=fmt.tokenizer("word", lowercase=True, unk_token="<unk>", eos_token="<eos>"),
         prompt=prompt, context=context, seed=10, scale=3.0, max_tokens=40, eos_id=word_vocab["<eos>"])

    chars = list("abcdefghij ") + ["\n"]
    char_vocab = {c: i for i, c in enumerate(chars)}
    prompt = "ab c"
    # No bos/eos: the prompt alone is the context.
    make("generate_char", vocab=chars, tokenizer=fmt.tokenizer("char"), prompt=prompt,
         context=[char_vocab[c] for c in prompt], seed=13, scale=3.0, max_tokens=30, eos_id=None)


if __name__ == "__main__":
    main()
