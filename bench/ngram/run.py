#!/usr/bin/python3
"""ARPA n-gram models in lstmlm: load time and memory per million n-grams, and scoring speed.

    bench/ngram/run.py [--lstmlm build/lstmlm] [--rounds 5] [--data ../shared/data]

Builds a pruned 5-gram (bench/ngram/make_arpa.py) from the corpora of ../shared/data (PTB, WikiText-2,
French), then, R rounds each: `lstmlm score -m MODEL` on an empty input (the load alone: wall time and
peak RSS, less those of the same run on a 4-unigram model), and on PTB's test set (tokens/s as score
reports it: one n-gram lookup chain per token, single-threaded). Prints medians with min-max.
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


if __name__ == "__main__":
    main()
