#!/usr/bin/python3
"""ARPA n-gram models in lstmlm: load time and memory per million n-grams, and scoring speed.

    bench/ngram/run.py [--lstmlm build/lstmlm] [--rounds 5] [--data ../shared/data]

Builds a pruned 5-gram (bench/ngram/make_arpa.py) from the corpora of ../shared/data (PTB, WikiText-2,
French), then, R rounds each: `lstmlm score -m MODEL` on an empty input (the load alone: wall time and
peak RSS, less those of the same run on a 4-unigram model), and on PTB's test set (tokens/s as score
reports it: one n-gram lookup chain per token, single-threaded). Then the mixture's cost: a random model of
MEDIUM's shape (V 10,000 with PTB's words, E 650, H 650, 2 layers) scoring PTB's test set alone and with
`--mix 5gram.arpa:0.5` (tokens/s, 1 thread, the ratio per round), and mix-tune's time beyond the scoring
(mix-tune against score --mix on the same 10,000 dev tokens), and the cache pointer's cost (score --context
document alone and with --cache-window 2000 on that model). Prints medians with min-max.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TINY = "\\data\\\nngram 1=4\n\n\\1-grams:\n-1\t<s>\n-1\t</s>\n-1\t<unk>\n-1\ta\n\n\\end\\\n"


def timed(cmd, stdin_path):
    with open(stdin_path, "rb") as f:
        r = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M"] + cmd, stdin=f, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {r.stderr}")
    m = re.search(r"TIME ([\d.]+) (\d+)", r.stderr)
    tps = re.search(r"\(([\d.]+) tokens/s\)", r.stderr)
    return float(m.group(1)), int(m.group(2)), float(tps.group(1)) if tps else None


def medium_ptb_model(path, texts):
    """A random LSTM of MEDIUM's shape whose vocabulary is PTB's words (padded to 10,000)."""
    sys.path.insert(0, os.path.dirname(HERE))
    from serve_load import medium_model
    words, seen = [], {"<unk>", "<eos>"}
    for t in texts[:2]:
        with open(t, encoding="utf-8") as f:
            for w in f.read().split():
                if w not in seen:
                    seen.add(w)
                    words.append(w)
    return medium_model(path, words)


def spread(xs, fmt="{:.3g}"):
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lstmlm", default=os.path.join(ROOT, "build", "lstmlm"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    a = ap.parse_args()
    d = a.data
    texts = [f"{d}/corpora-ptb/ptb.valid.txt", f"{d}/corpora-ptb/ptb.test.txt", f"{d}/corpora-wikitext-2/valid.txt",
             f"{d}/corpora-wikitext-2/test.txt", f"{d}/corpora-french/wiki-fr-extract.txt",
             f"{d}/corpora-french/notre-dame-de-paris.txt"]
    with tempfile.TemporaryDirectory() as tmp:
        big, tiny, empty = (os.path.join(tmp, n) for n in ("5gram.arpa", "tiny.arpa", "empty.txt"))
        subprocess.run([sys.executable, os.path.join(HERE, "make_arpa.py"), "-o", "5", big] + texts, check=True)
        with open(tiny, "w") as f:
            f.write(TINY)
        open(empty, "w").close()
        with open(big) as f:
            ngrams = sum(int(line.split("=")[1]) for line in f if line.startswith("ngram "))
        load_s, load_kb, tps = [], [], []
        for _ in range(a.rounds):
            t0, kb0, _ = timed([a.lstmlm, "score", "-m", tiny, "-v", "summary"], empty)
            t1, kb1, _ = timed([a.lstmlm, "score", "-m", big, "-v", "summary"], empty)
            load_s.append((t1 - t0) / (ngrams / 1e6))
            load_kb.append((kb1 - kb0) / 1024 / (ngrams / 1e6))
            _, _, rate = timed([a.lstmlm, "score", "-m", big, "-v", "summary"], texts[1])
            tps.append(rate)
        print(f"model: {ngrams} n-grams (5-gram, orders >= 3 pruned of singletons), {os.path.getsize(big) / 1e6:.1f} MB ARPA")
        print(f"load: {spread(load_s)} s per million n-grams")
        print(f"memory: {spread(load_kb)} MB per million n-grams (peak RSS over a 4-unigram model's)")
        print(f"score on PTB test: {spread(tps, '{:.0f}')} tokens/s, 1 thread")
        medium = medium_ptb_model(os.path.join(tmp, "medium"), texts)
        dev = os.path.join(tmp, "dev.txt")
        with open(texts[1], encoding="utf-8") as f, open(dev, "w", encoding="utf-8") as o:
            n = 0
            for line in f:
                if n >= 10000:
                    break
                o.write(line)
                n += len(line.split()) + 1
        alone, mixed, ratio, tune, mixdev = [], [], [], [], []
        for _ in range(a.rounds):
            _, _, r0 = timed([a.lstmlm, "score", "-m", medium, "-t", "1", "-v", "summary"], texts[1])
            _, _, r1 = timed([a.lstmlm, "score", "-m", medium, "-t", "1", "-v", "summary", "--mix", big + ":0.5"],
                             texts[1])
            alone.append(r0)
            mixed.append(r1)
            ratio.append(r1 / r0)
            t_mix, _, _ = timed([a.lstmlm, "score", "-m", medium, "-t", "1", "-v", "summary", "--mix", big + ":0.5",
                                 dev], empty)
            t_tune, _, _ = timed([a.lstmlm, "mix-tune", "-m", medium, "-m", big, "-t", "1", "--dev", dev], empty)
            mixdev.append(t_mix)
            tune.append(t_tune - t_mix)
        print(f"MEDIUM-shaped model on PTB test, 1 thread: alone {spread(alone, '{:.0f}')} tokens/s, "
              f"--mix 5-gram:0.5 {spread(mixed, '{:.0f}')} tokens/s, ratio {spread(ratio)}")
        print(f"mix-tune on {n} dev tokens: {spread(tune)} s beyond score --mix's {spread(mixdev)} s")
        # The cache pointer: the same model reading PTB's test set as one document, alone and with W = 2000.
        doc, cached, overhead = [], [], []
        for _ in range(a.rounds):
            _, _, r0 = timed([a.lstmlm, "score", "-m", medium, "-t", "1", "-v", "summary", "--context", "document"],
                             texts[1])
            _, _, r1 = timed([a.lstmlm, "score", "-m", medium, "-t", "1", "-v", "summary", "--context", "document",
                              "--cache-window", "2000"], texts[1])
            doc.append(r0)
            cached.append(r1)
            overhead.append(r0 / r1 - 1)
        print(f"MEDIUM-shaped model, PTB test as one document, 1 thread: alone {spread(doc, '{:.0f}')} tokens/s, "
              f"--cache-window 2000 {spread(cached, '{:.0f}')} tokens/s: the cache adds {spread(overhead)} of the "
              "scoring time")


if __name__ == "__main__":
    main()
