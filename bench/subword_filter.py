#!/usr/bin/python3
"""The JSONL perplexity filter (`lstmlm score --input-format jsonl`) on a SentencePiece model with
`--normalize ccnet`, against the same filter on a word model of the same size: tokens/s of each, and
their ratio, so that tokenization and normalization are seen to stay a small part of the cost.

    bench/subword_filter.py --cli build/lstmlm [--rounds 3] [--hidden 256] [--embedding 64] [--threads 1]

Both models are random LSTMs (V 1000, E, H, one layer) written here: the SentencePiece one over the 1000
pieces of ../shared/data/spm-google-test-model-botchan/test_model.model (unigram, trained on Botchan), the
word one over the 999 most frequent words of the text plus <unk> (ids, not weights, differ). The documents
are the lines of the English and French corpora of ../shared/data, 8 lines per document. Each round runs the
two filters one after the other (alternating which goes first); the figures are medians over the rounds,
with the min..max spread. Tokens/s counts each model's own tokens (pieces vs words, eos included), as the
filter's summary line reports them.
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
DATA = os.path.join(HERE, "..", "..", "shared", "data")
CORPORA = ["corpora-ptb/ptb.valid.txt", "corpora-ptb/ptb.test.txt", "corpora-wikitext-2/valid.txt",
           "corpora-wikitext-2/test.txt", "corpora-french/notre-dame-de-paris.txt",
           "corpora-french/wiki-fr-extract.txt"]


def tensors(V, E, H, seed):
    import numpy as np
    rng = np.random.default_rng(seed)

    def f(*s):
        return rng.normal(0, 0.2, s).astype(np.float32)
    return {"embedding.weight": f(V, E), "lstm.weight_ih_l0": f(4 * H, E), "lstm.weight_hh_l0": f(4 * H, H),
            "lstm.bias_ih_l0": f(4 * H), "lstm.bias_hh_l0": f(4 * H), "decoder.weight": f(V, H),
            "decoder.bias": f(V)}


def make_models(tmp, lines, E, H):
    import sentencepiece
    from lstmlm.format import layer, write_model
    spm = os.path.join(DATA, "spm-google-test-model-botchan", "test_model.model")
    sp = sentencepiece.SentencePieceProcessor(model_file=spm)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    with open(spm, "rb") as f:
        blob = f.read()
    sub = os.path.join(tmp, "spm")
    write_model(sub, vocab=pieces, embedding_dim=E, layers=[layer(H)], tied=False,
                tokenizer={"type": "sentencepiece", "model": "tokenizer.model", "unk_token": "<unk>",
                           "bos_token": "<s>", "eos_token": "</s>"},
                tensors=tensors(len(pieces), E, H, 1), source={"framework": "bench"},
                assets={"tokenizer.model": blob})
    counts = collections.Counter(w for line in lines for w in line.lower().split())
    words = ["<unk>", "</s>"] + [w for w, _ in counts.most_common(len(pieces) - 2)]
    word = os.path.join(tmp, "word")
    write_model(word, vocab=words, embedding_dim=E, layers=[layer(H)], tied=False,
                tokenizer={"type": "word", "lowercase": True, "unk_token": "<unk>", "eos_token": "</s>"},
                tensors=tensors(len(words), E, H, 2), source={"framework": "bench"})
    return sub, word


def run(cli, model, docs, threads, *opts):
    t0 = time.perf_counter()
    r = subprocess.run([cli, "score", "-m", model, "--input-format", "jsonl", "-t", str(threads), *opts, docs],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"subword_filter: {model}: {r.stderr.strip()}")
    m = re.search(r"; (\d+) tokens,", r.stderr)
    return int(m.group(1)) / wall, int(m.group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--embedding", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    lines = []
    for c in CORPORA:
        with open(os.path.join(DATA, c), encoding="utf-8", errors="replace") as f:
            lines += [x.strip() for x in f if x.strip()]
    with tempfile.TemporaryDirectory(prefix="lstmlm_subword_bench_") as tmp:
        sub, word = make_models(tmp, lines, a.embedding, a.hidden)
        docs = os.path.join(tmp, "docs.jsonl")
        with open(docs, "w", encoding="utf-8") as f:
            for i in range(0, len(lines), 8):
                f.write(json.dumps({"id": i, "text": "\n".join(lines[i:i + 8])}, ensure_ascii=False) + "\n")
        sub_rates, word_rates, ratios = [], [], []
        for k in range(a.rounds):
            cells = [("sub", sub, ("--normalize", "ccnet")), ("word", word, ())]
            if k % 2:
                cells.reverse()
            got = {name: run(a.cli, m, docs, a.threads, *opts) for name, m, opts in cells}
            sub_rates.append(got["sub"][0])
            word_rates.append(got["word"][0])
            ratios.append(got["sub"][0] / got["word"][0])
            print(f"round {k + 1}: sentencepiece+ccnet {got['sub'][0]:,.0f} tokens/s ({got['sub'][1]:,} tokens), "
                  f"word {got['word'][0]:,.0f} tokens/s ({got['word'][1]:,} tokens), ratio {ratios[-1]:.2f}")

        def fmt(v, d=0):
            return f"{statistics.median(v):,.{d}f} ({min(v):,.{d}f}..{max(v):,.{d}f})"
        print(f"\n| model (V 1000, E {a.embedding}, H {a.hidden}, t{a.threads}) | tokens/s, median (min..max) |")
        print("|---|--:|")
        print(f"| sentencepiece + --normalize ccnet | {fmt(sub_rates)} |")
        print(f"| word | {fmt(word_rates)} |")
        print(f"| ratio | {fmt(ratios, 2)} |")


if __name__ == "__main__":
    main()
