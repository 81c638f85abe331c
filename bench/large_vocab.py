#!/usr/bin/env python3
"""Large vocabularies without the full softmax (docs/performance.md): random models with a V-word output over a
hidden layer of H units (default 200,000 x 1024: 0.8 GB of fp32 output weights), timed in one process through the
Python module after loading, each comparison paired within one repetition:

  score  --softmax skip  against the full softmax (an LSTM, fp32 kernels): one sentence of --tokens words, batch 1;
  predict --top 10 --softmax skip  against the full softmax: --contexts contexts of two words, one call each;
  a class-factored output (sqrt(V) classes of contiguous words, rnnlm's kind: a sigmoid RNN on the
  double-precision path) against the same RNN with the full softmax, on the fp32 kernels (a tanh RNN, the
  fastest full softmax lstmlm has) and on the double-precision path, scoring one sentence at batch 1, and
  generating --generate tokens of one sample (the class model drawing class, then word).

The models are written once into --dir (about 3 GB) with numpy and lstmlm.format. Prints one line per comparison:
the median time per token or call of each side, and the median, min and max of the per-repetition ratios.

  PYTHONPATH=build/python:python /usr/bin/python3 bench/large_vocab.py --dir /tmp/large-vocab
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np


def write_lstm(path, V, H, E, rng):
    import lstmlm.format as lf
    t = {lf.names.embedding: rng.normal(0, 0.1, (V, E)).astype(np.float32),
         lf.names.weight_ih(0): rng.normal(0, 0.05, (4 * H, E)).astype(np.float32),
         lf.names.weight_hh(0): rng.normal(0, 0.05, (4 * H, H)).astype(np.float32),
         lf.names.bias_ih(0): np.zeros(4 * H, np.float32), lf.names.bias_hh(0): np.zeros(4 * H, np.float32),
         lf.names.decoder_weight: rng.normal(0, 0.05, (V, H)).astype(np.float32),
         lf.names.decoder_bias: np.zeros(V, np.float32)}
    lf.write_model(path, vocab=vocab(V), embedding_dim=E, layers=[lf.layer(H)], tied=False, tensors=t,
                   tokenizer=lf.tokenizer(unk_token="<unk>", eos_token="</s>"),
                   source={"framework": "random", "exporter": "bench/large_vocab.py"})


def write_rnn(path, V, H, E, rng, activation, classes):
    """A one-layer RNN; `classes` > 0: a class-factored output of that many classes of contiguous words."""
    import lstmlm.format as lf
    t = {lf.names.embedding: rng.normal(0, 0.1, (V, E)).astype(np.float32),
         lf.names.weight_ih(0, cell="rnn"): rng.normal(0, 0.05, (H, E)).astype(np.float32),
         lf.names.weight_hh(0, cell="rnn"): rng.normal(0, 0.05, (H, H)).astype(np.float32),
         lf.names.bias_ih(0, cell="rnn"): np.zeros(H, np.float32),
         lf.names.decoder_weight: rng.normal(0, 0.05, (V, H)).astype(np.float32),
         lf.names.decoder_bias: np.zeros(V, np.float32)}
    if classes:
        t[lf.names.class_weight] = rng.normal(0, 0.05, (classes, H)).astype(np.float32)
        t[lf.names.class_bias] = np.zeros(classes, np.float32)
        t[lf.names.word_class] = (np.arange(V) * classes // V).astype(np.float32)
    lf.write_model(path, vocab=vocab(V), embedding_dim=E, layers=[lf.rnn_layer(H, activation=activation)],
                   tied=False, tensors=t, classes=classes or None,
                   tokenizer=lf.tokenizer(unk_token="<unk>", eos_token="</s>"),
                   source={"framework": "random", "exporter": "bench/large_vocab.py"})


def vocab(V):
    return ["<unk>", "</s>"] + [f"w{i}" for i in range(V - 2)]


def models(d, V, H, E):
    C = int(round(V ** 0.5))
    paths = {k: os.path.join(d, f"{k}-{V}x{H}") for k in ("lstm", "rnn-fp32", "rnn-exact", "rnn-class")}
    rng = np.random.default_rng(1)
    makers = {"lstm": lambda p: write_lstm(p, V, H, E, rng),
              "rnn-fp32": lambda p: write_rnn(p, V, H, E, rng, "tanh", 0),
              "rnn-exact": lambda p: write_rnn(p, V, H, E, rng, "sigmoid", 0),
              "rnn-class": lambda p: write_rnn(p, V, H, E, rng, "sigmoid", C)}
    for k, p in paths.items():
        if not os.path.exists(os.path.join(p, "weights.safetensors")):
            print(f"large_vocab: writing {p}", file=sys.stderr)
            makers[k](p)
    return paths, C


def clock(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def report(name, unit, a_name, b_name, a, b):
    """a, b: per-repetition seconds per unit of the two sides; the ratio b / a (how many times faster a is)."""
    ratios = [y / x for x, y in zip(a, b)]
    print(f"{name}: {a_name} {statistics.median(a) * 1e3:.3f} ms/{unit}, {b_name} "
          f"{statistics.median(b) * 1e3:.3f} ms/{unit}: {statistics.median(ratios):.1f}x "
          f"(min {min(ratios):.1f}x, max {max(ratios):.1f}x, {len(ratios)} repetitions)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="where the random models are written (once) and read")
    ap.add_argument("--vocab", type=int, default=200000)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--embedding", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=24, help="words of the scored sentence")
    ap.add_argument("--contexts", type=int, default=16, help="predict calls per repetition")
    ap.add_argument("--generate", type=int, default=8, help="tokens generated per repetition")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", choices=["softmax", "classes"], help="run one group of comparisons")
    a = ap.parse_args()
    import lstmlm
    os.makedirs(a.dir, exist_ok=True)
    paths, C = models(a.dir, a.vocab, a.hidden, a.embedding)
    rng = np.random.default_rng(7)
    sentence = " ".join(f"w{i}" for i in rng.integers(0, a.vocab - 2, a.tokens))
    contexts = [f"w{x} w{y}" for x, y in rng.integers(0, a.vocab - 2, (a.contexts, 2))]
    n_tokens = a.tokens + 1  # </s> scored too
    print(f"large_vocab: V={a.vocab} H={a.hidden} E={a.embedding} classes={C} threads={a.threads} "
          f"output {a.vocab * a.hidden * 4 / 1e9:.2f} GB fp32", flush=True)

    if a.only in (None, "softmax"):
        m = lstmlm.Model(paths["lstm"], threads=a.threads)
        score = {s: (lambda s=s: m.score_lines([sentence], softmax=s)) for s in ("full", "skip")}
        pred = {s: (lambda s=s: [m.predict(c, top=10, softmax=s) for c in contexts]) for s in ("full", "skip")}
        for f in (*score.values(), *pred.values()):
            f()  # warm: packed weights, pages touched
        times = {k: [] for k in ("score-full", "score-skip", "predict-full", "predict-skip")}
        for _ in range(a.repeats):
            for s in ("full", "skip"):
                times["score-" + s].append(clock(score[s]) / n_tokens)
                times["predict-" + s].append(clock(pred[s]) / len(contexts))
        report("score (LSTM, batch 1)", "token", "--softmax skip", "full", times["score-skip"], times["score-full"])
        report("predict --top 10 (LSTM)", "call", "--softmax skip", "full", times["predict-skip"],
               times["predict-full"])
        del m, score, pred

    if a.only in (None, "classes"):
        ms = {k: lstmlm.Model(paths[k], threads=a.threads) for k in ("rnn-class", "rnn-fp32", "rnn-exact")}
        for m in ms.values():
            m.score_lines([sentence])
        times = {k: [] for k in ms}
        for _ in range(a.repeats):
            for k, m in ms.items():
                times[k].append(clock(lambda: m.score_lines([sentence])) / n_tokens)
        report(f"score, {C} classes against the full softmax on the fp32 kernels (RNN, batch 1)", "token",
               "classes", "full fp32", times["rnn-class"], times["rnn-fp32"])
        report(f"score, {C} classes against the full softmax on the double-precision path (RNN, batch 1)",
               "token", "classes", "full fp64", times["rnn-class"], times["rnn-exact"])
        # Sampling: the class model draws class, then word; the full model's every step is one pass over the
        # output layer (no later steps to group with, as score has).
        gen = {k: (lambda m=ms[k]: m.generate("w1 w2", max_tokens=a.generate, seed=1, stop_at_eos=False))
               for k in ("rnn-class", "rnn-fp32")}
        for f in gen.values():
            f()
        gtimes = {k: [] for k in gen}
        for _ in range(a.repeats):
            for k, f in gen.items():
                gtimes[k].append(clock(f) / a.generate)
        report(f"generate, {C} classes (class, then word) against the full softmax on the fp32 kernels (RNN, 1 "
               "sample)", "token", "classes", "full fp32", gtimes["rnn-class"], gtimes["rnn-fp32"])


if __name__ == "__main__":
    main()
