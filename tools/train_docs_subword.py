#!/usr/bin/python3
"""Train models/docs-spm: a SentencePiece unigram model (vocab 500) and a small LSTM LM on this
repository's own prose (README.md and docs/*.md at commit REV,
fenced code blocks and blank lines removed; every 10th line held out), then convert it.

Reproducible: fixed seeds, one thread, deterministic CPU ops. Usage (from the repository root):

    /usr/bin/python3 tools/train_docs_subword.py [--out models/docs-spm] [--epochs 12] [--work DIR]
"""
import argparse
import math
import os
import random
import subprocess
import sys
import tempfile

import sentencepiece as spm
import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# The prose as of this commit, so later edits of the docs do not change the model.
REV = "6456579f7cb601518e6ad2dd53f3eeeed7ea21a7"


def git(*a):
    return subprocess.check_output(["git", "-C", ROOT] + list(a)).decode("utf-8")


def prose_lines(rev):
    names = [n for n in git("ls-tree", "--name-only", rev, "docs/").split("\n") if n.endswith(".md")]
    files = ["README.md"] + sorted(names)
    lines = []
    for f in files:
        in_code = False
        for line in git("show", "%s:%s" % (rev, f)).split("\n"):
            s = line.strip()
            if s.startswith("```"):
                in_code = not in_code
                continue
            if in_code or not s:
                continue
            lines.append(" ".join(s.split()))
    return files, lines


def to_f16(path):
    """Rewrite an F32 safetensors file as F16 (the values are already float16-exact)."""
    import json
    import struct
    import numpy as np
    with open(path, "rb") as fh:
        raw = fh.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    meta = header.pop("__metadata__", None)
    out, parts, off = {}, [], 0
    for name in sorted(header, key=lambda k: header[k]["data_offsets"][0]):
        e = header[name]
        a, b = e["data_offsets"]
        arr = np.frombuffer(body[a:b], dtype="<f4")
        h = arr.astype("<f2")
        assert np.array_equal(h.astype("<f4"), arr), name
        data = h.tobytes()
        out[name] = {"dtype": "F16", "shape": e["shape"], "data_offsets": [off, off + len(data)]}
        parts.append(data)
        off += len(data)
    if meta is not None:
        out["__metadata__"] = meta
    hj = json.dumps(out, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(hj)) + hj + b"".join(parts))


class RNNModel(nn.Module):
    # word_language_model's names: encoder, rnn, decoder
    def __init__(self, V, E=64, H=128):
        super().__init__()
        self.encoder = nn.Embedding(V, E)
        self.rnn = nn.LSTM(E, H, 1)
        self.decoder = nn.Linear(H, V)

    def forward(self, x):  # x: T x B
        out, _ = self.rnn(self.encoder(x))
        return self.decoder(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "docs-spm"))
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--work", default=None)
    ap.add_argument("--rev", default=REV, help="git revision whose README.md and docs/*.md are read")
    args = ap.parse_args()

    random.seed(1)
    torch.manual_seed(1)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    work = args.work or tempfile.mkdtemp(prefix="docs-spm-")
    os.makedirs(work, exist_ok=True)
    files, lines = prose_lines(args.rev)
    # every 10th line held out
    train = [l for i, l in enumerate(lines) if i % 10 != 9]
    valid = [l for i, l in enumerate(lines) if i % 10 == 9]
    text = os.path.join(work, "train.txt")
    with open(text, "w", encoding="utf-8") as fh:
        fh.write("\n".join(train) + "\n")
    print("files:", args.rev, " ".join(files), file=sys.stderr)
    print("lines: %d train, %d held out" % (len(train), len(valid)), file=sys.stderr)

    prefix = os.path.join(work, "spm")
    spm.SentencePieceTrainer.train(
        input=text, model_prefix=prefix, vocab_size=500, model_type="unigram", character_coverage=1.0,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1, seed_sentencepiece_size=100000,
        shuffle_input_sentence=False, input_sentence_size=0, minloglevel=2,
        normalization_rule_name="identity")  # no NFKC table: the .model stays ~10 KB
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    V, bos, eos = sp.get_piece_size(), sp.bos_id(), sp.eos_id()

    def encode(ls):
        return [[bos] + sp.encode(l) + [eos] for l in ls]

    tr, va = encode(train), encode(valid)
    model = RNNModel(V)
    opt = torch.optim.Adam(model.parameters(), lr=0.005)

    def batches(seqs, bs):
        for i in range(0, len(seqs), bs):
            chunk = seqs[i:i + bs]
            T = max(len(s) for s in chunk)
            x = torch.full((T - 1, len(chunk)), eos, dtype=torch.long)
            y = torch.full((T - 1, len(chunk)), -100, dtype=torch.long)
            for j, s in enumerate(chunk):
                x[:len(s) - 1, j] = torch.tensor(s[:-1])
                y[:len(s) - 1, j] = torch.tensor(s[1:])
            yield x, y

    def evaluate(seqs):
        model.eval()
        tot, n = 0.0, 0
        with torch.no_grad():
            for x, y in batches(seqs, 64):
                out = model(x)
                lossf_ = nn.CrossEntropyLoss(reduction="sum", ignore_index=-100)
                tot += lossf_(out.view(-1, V), y.view(-1)).item()
                n += int((y != -100).sum())
        return math.exp(tot / n)

    rng = random.Random(1)
    for ep in range(args.epochs):
        model.train()
        order = sorted(tr, key=lambda s: (len(s), rng.random()))
        bl = list(batches(order, 32))
        rng.shuffle(bl)
        for x, y in bl:
            opt.zero_grad()
            out = model(x)
            loss = nn.functional.cross_entropy(out.view(-1, V), y.view(-1), ignore_index=-100)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
        print("epoch %d: held-out ppl %.2f (per piece, </s> included)" % (ep + 1, evaluate(va)), file=sys.stderr)

    # weights rounded to float16, so the model directory stays small (F16 safetensors, widened
    # exactly at load) and the .pt holds exactly the values the model directory holds
    state = {k: v.detach().half().float() for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    print("held-out ppl after float16 rounding: %.2f" % evaluate(va), file=sys.stderr)
    pt = os.path.join(work, "docs-spm.pt")
    torch.save(state, pt)
    # Run from the repository with its relative output path, so the log names no path of this machine.
    out = os.path.relpath(os.path.abspath(args.out), ROOT)
    subprocess.check_call([sys.executable, os.path.join("tools", "convert.py"), pt, out,
                           "--sentencepiece", prefix + ".model"], cwd=ROOT)
    to_f16(os.path.join(ROOT, out, "weights.safetensors"))
    print("saved docs-spm.pt (a temporary directory) ->", out, file=sys.stderr)


if __name__ == "__main__":
    main()
