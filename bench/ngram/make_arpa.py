#!/usr/bin/python3
"""Writes a back-off ARPA model of order N counted from text files: absolute discounting (D = 0.5),
interpolated and written in back-off form, n-grams of order 3 and above seen once pruned, <unk> given the
mass of one token. A benchmark input (a real corpus's n-gram structure, sizes a user meets), not a
competitive LM: KenLM's lmplz is not a Debian package.

    bench/ngram/make_arpa.py [-o 5] [--lower] OUT.arpa TEXT...   (a sentence per line; words split on whitespace)
"""
import argparse
import math
import sys
from collections import defaultdict

D = 0.5


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--order", type=int, default=5)
    ap.add_argument("--lower", action="store_true", help="lowercase the text (for a model that lowercases)")
    ap.add_argument("out")
    ap.add_argument("text", nargs="+")
    a = ap.parse_args()
    N = a.order
    counts = [defaultdict(int) for _ in range(N + 1)]  # counts[n][tuple of n words]
    for path in a.text:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                words = (line.lower() if a.lower else line).split()
                if not words:
                    continue
                s = ["<s>"] + words + ["</s>"]
                for i in range(1, len(s)):  # each predicted word (<s> is context only)
                    for n in range(1, min(N, i + 1) + 1):
                        counts[n][tuple(s[i - n + 1:i + 1])] += 1
    for n in range(3, N + 1):  # prune singletons of order >= 3
        counts[n] = defaultdict(int, {g: c for g, c in counts[n].items() if c > 1})
    total = sum(counts[1].values())
    prob = [dict() for _ in range(N + 1)]  # log10 p of each written n-gram
    bo = [dict() for _ in range(N + 1)]
    for g, c in counts[1].items():
        prob[1][g] = math.log10(c / (total + 1))
    # <unk>: one token's mass more than the text gave it (a text may hold "<unk>" itself).
    prob[1][("<unk>",)] = math.log10((counts[1].get(("<unk>",), 0) + 1) / (total + 1))
    prob[1][("<s>",)] = -99.0

    def p(g):  # log10 p(g[-1] | g[:-1]) under the orders written so far
        if g in prob[len(g)]:
            return prob[len(g)][g]
        return bo[len(g) - 1].get(g[:-1], 0.0) + p(g[1:])

    for n in range(2, N + 1):
        # Contexts: their total count and number of distinct continuations, from the unpruned counts
        # of this order (the mass of pruned n-grams goes to the back-off).
        ctx_count = defaultdict(int)
        ctx_types = defaultdict(int)
        for g, c in counts[n].items():
            ctx_count[g[:-1]] += c
            ctx_types[g[:-1]] += 1
        for g, c in counts[n].items():
            h = g[:-1]
            gamma = D * ctx_types[h] / ctx_count[h]
            prob[n][g] = math.log10((c - D) / ctx_count[h] + gamma * 10 ** p(g[1:]))
        seen = defaultdict(lambda: [0.0, 0.0])
        for g in counts[n]:
            s = seen[g[:-1]]
            s[0] += 10 ** prob[n][g]
            s[1] += 10 ** p(g[1:])
        for h, (num, den) in seen.items():
            if h in prob[n - 1]:
                bo[n - 1][h] = math.log10(max(1e-12, 1 - num) / max(1e-12, 1 - den))
    with open(a.out, "w", encoding="utf-8") as out:
        out.write("\\data\\\n")
        for n in range(1, N + 1):
            out.write(f"ngram {n}={len(prob[n])}\n")
        for n in range(1, N + 1):
            out.write(f"\n\\{n}-grams:\n")
            for g, lp in prob[n].items():
                b = bo[n].get(g)
                out.write(f"{lp:.7g}\t{' '.join(g)}" + (f"\t{b:.7g}\n" if b is not None and n < N else "\n"))
        out.write("\n\\end\\\n")
    print(f"{a.out}: " + ", ".join(f"{len(prob[n])} {n}-grams" for n in range(1, N + 1)), file=sys.stderr)


if __name__ == "__main__":
    main()
