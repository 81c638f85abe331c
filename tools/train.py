#!/usr/bin/env python3
"""Trains the bundled word-level model (models/fairytales-word) with PyTorch.

Shape is exactly the SEED shape lstmlm was built for (docs/performance.md): vocabulary 554 (the 552 most
frequent words of the train split, plus <unk> and <eos>), Embedding(554, 100) -> LSTM(100) -> Linear(100, 554);
191,754 parameters. PyTorch's LSTM has two bias vectors (bias_ih, bias_hh) where Keras and TF have one;
bias_hh is held at zero and frozen so the trained model has exactly the single-bias parameter count.

Data: Project Gutenberg #4018 (Japanese Fairy Tales, public domain), Moses-tokenised, as found in
../shared/data/torch-wlm-fairytales. Text is lowercased (552 words cover more of it that way) and every
line ends with <eos>, like pytorch/examples word_language_model.

Usage: /usr/bin/python3 tools/train.py [--data DIR] [--out models/fairytales-word] [--epochs N]
Deterministic: fixed seed, one thread, deterministic algorithms.
"""
import argparse
import collections
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
from lstmlm.format import layer, tokenizer, write_model  # noqa: E402
from lstmlm.format import names as tensor_names  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNK, EOS = "<unk>", "<eos>"
VOCAB_WORDS = 552
EMB = HID = 100


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.lower().split() for line in f]


def build_vocab(lines):
    # Most frequent first; ties broken by first occurrence so the order is a pure function of the text.
    # The corpus already writes rare words as <unk>: that is our <unk>, not one of the 552 words.
    counts = collections.Counter()
    first = {}
    for words in lines:
        for w in words:
            if w in (UNK, EOS):
                continue
            counts[w] += 1
            first.setdefault(w, len(first))
    ranked = sorted(counts, key=lambda w: (-counts[w], first[w]))
    return [UNK, EOS] + ranked[:VOCAB_WORDS]


def encode(lines, ids):
    unk = ids[UNK]
    out = []
    for words in lines:
        out.extend(ids.get(w, unk) for w in words)
        out.append(ids[EOS])
    return torch.tensor(out, dtype=torch.long)


class WordLM(nn.Module):
    def __init__(self, vocab_size, dropout):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, EMB)
        self.lstm = nn.LSTM(EMB, HID)
        self.decoder = nn.Linear(HID, vocab_size)
        self.drop = nn.Dropout(dropout)
        with torch.no_grad():
            self.lstm.bias_hh_l0.zero_()
        self.lstm.bias_hh_l0.requires_grad_(False)

    def forward(self, x, state):
        y, state = self.lstm(self.drop(self.embedding(x)), state)
        return self.decoder(self.drop(y)), state


def batchify(data, streams):
    n = data.size(0) // streams
    return data[: n * streams].view(streams, n).t().contiguous()  # [time, streams]


def evaluate(model, data):
    """Per-token mean negative log-likelihood (nats) of one continuous stream, state carried across lines."""
    model.eval()
    with torch.no_grad():
        x = data[:-1].view(-1, 1)
        logits, _ = model(x, None)
        nll = nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), data[1:], reduction="sum")
    return nll.item() / (data.size(0) - 1)


def evaluate_sentences(model, lines, ids):
    """Mean NLL per predicted token the way `lstmlm score` scores a file by default: state reset per line,
    <eos> appended, the first word predicted from <eos> (the model has no bos token)."""
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for words in lines:
            seq = encode([words], ids)
            x = torch.cat([torch.tensor([ids[EOS]]), seq[:-1]]).view(-1, 1)
            logits, _ = model(x, None)
            total += nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), seq, reduction="sum").item()
            count += seq.size(0)
    return total / count


def count_params(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(REPO, "..", "shared", "data", "torch-wlm-fairytales"))
    ap.add_argument("--out", default=os.path.join(REPO, "models", "fairytales-word"))
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--bptt", type=int, default=35)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--dropout", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=4018)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    train_lines = read_lines(os.path.join(args.data, "train.txt"))
    valid_lines = read_lines(os.path.join(args.data, "valid.txt"))
    vocab = build_vocab(train_lines)
    ids = {w: i for i, w in enumerate(vocab)}
    train, valid = encode(train_lines, ids), encode(valid_lines, ids)

    log_lines = []

    def log(msg):
        print(msg, flush=True)
        log_lines.append(msg)

    model = WordLM(len(vocab), args.dropout)
    log(f"torch {torch.__version__}, seed {args.seed}, 1 thread; vocab {len(vocab)}, "
        f"train tokens {train.numel()} (unk {int((train == ids[UNK]).sum())}), valid tokens {valid.numel()} "
        f"(unk {int((valid == ids[UNK]).sum())}); trainable parameters {count_params(model)}")
    log(f"Adam lr {args.lr}, dropout {args.dropout}, bptt {args.bptt}, batch {args.batch}, "
        f"grad clip 0.25 (global norm), lr halved when validation does not improve")
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=args.lr)
    batches = batchify(train, args.batch)
    best, best_state = float("inf"), None
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        model.train()
        state, total, n = None, 0.0, 0
        for i in range(0, batches.size(0) - 1, args.bptt):
            seq = min(args.bptt, batches.size(0) - 1 - i)
            x, y = batches[i:i + seq], batches[i + 1:i + 1 + seq]
            if state is not None:
                state = tuple(s.detach() for s in state)
            logits, state = model(x, state)
            loss = nn.functional.cross_entropy(logits.view(-1, len(vocab)), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            opt.step()
            total += loss.item() * y.numel()
            n += y.numel()
        val = evaluate(model, valid)
        log(f"epoch {epoch:2d}  train ppl {math.exp(total / n):8.2f}  valid ppl {math.exp(val):8.2f}  "
            f"lr {opt.param_groups[0]['lr']:.5f}  {time.time() - start:6.1f}s")
        if val < best:
            best = val
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            for g in opt.param_groups:
                g["lr"] /= 2
    model.load_state_dict(best_state)
    stream = evaluate(model, valid)
    sent = evaluate_sentences(model, valid_lines, ids)
    log(f"best: valid ppl {math.exp(stream):.2f} (one stream, state carried across lines); "
        f"{math.exp(sent):.2f} (per line, state reset, first word predicted from <eos>, as `lstmlm score`)")

    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    tensors = {
        tensor_names.embedding: sd["embedding.weight"],
        tensor_names.weight_ih(0): sd["lstm.weight_ih_l0"],
        tensor_names.weight_hh(0): sd["lstm.weight_hh_l0"],
        # bias_hh is frozen at zero; the sum keeps the export exact even if that ever changes.
        tensor_names.bias_ih(0): sd["lstm.bias_ih_l0"] + sd["lstm.bias_hh_l0"],
        tensor_names.decoder_weight: sd["decoder.weight"],
        tensor_names.decoder_bias: sd["decoder.bias"],
    }
    nparams = sum(t.size for t in tensors.values())
    log(f"exported parameters {nparams}")
    write_model(args.out, vocab=vocab, embedding_dim=EMB, layers=[layer(HID)], tied=False,
                tokenizer=tokenizer(type="word", lowercase=True, unk_token=UNK, eos_token=EOS),
                tensors=tensors,
                source={"framework": "pytorch", "version": torch.__version__, "exporter": "tools/train.py",
                        "data": "Project Gutenberg #4018 (Japanese Fairy Tales), torch-wlm-fairytales "
                                "train.txt / valid.txt",
                        "valid_ppl_stream": round(math.exp(stream), 2),
                        "valid_ppl_sentences": round(math.exp(sent), 2)})
    with open(os.path.join(args.out, "training.log"), "w", encoding="utf-8") as f:
        f.write("\n".join(log_lines) + "\n")


if __name__ == "__main__":
    main()
