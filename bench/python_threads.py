#!/usr/bin/python3
"""Thread scaling of the Python module: N Python threads sharing one lstmlm.Model, each scoring its share
of a corpus, against one thread, in the same run (a benchmark, not a test: these machines are noisy).

    PYTHONPATH=build/python bench/python_threads.py [--model models/fairytales-word] [--corpus FILE]
        [--threads 1,2,4] [--repeat 5] [--mode score|batch] [--lines 4000]

mode score: one m.score(sentence) call per line (KenLM's loop); batch: m.score_batch on chunks of 64 lines.
The Model is made with threads=1 (one engine thread per call; --engine-threads N changes it), so the speed-up comes from the Python
threads running engine calls at once with the GIL released. Prints a markdown table: lines/s median and
spread (min-max) over the repeats, and the ratio to 1 thread, with the CPU named.
"""
import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dask_scaling import cpu_name  # noqa: E402  (the CPU named the same way in both tables)


def run(model, lines, nthreads, mode):
    shares = [lines[k::nthreads] for k in range(nthreads)]

    def work(share):
        if mode == "score":
            for s in share:
                model.score(s)
        else:
            for i in range(0, len(share), 64):
                model.score_batch(share[i:i + 64])

    ts = [threading.Thread(target=work, args=(s,)) for s in shares]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return len(lines) / (time.perf_counter() - t0)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(root, "models", "fairytales-word"))
    ap.add_argument("--corpus", default=os.path.join(root, "..", "shared", "data", "corpora-ptb", "ptb.valid.txt"))
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--lines", type=int, default=4000)
    ap.add_argument("--mode", choices=["score", "batch"], default="score")
    ap.add_argument("--engine-threads", type=int, default=1, help="Model(threads=N): engine threads per call")
    a = ap.parse_args()
    import lstmlm
    model = lstmlm.Model(a.model, threads=a.engine_threads)
    with open(a.corpus, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f][: a.lines]
    counts = [int(x) for x in a.threads.split(",")]
    run(model, lines[:200], max(counts), a.mode)  # warm-up: every engine made and packed
    results = {n: [] for n in counts}
    for _ in range(a.repeat):  # interleaved, so a noisy moment hits every count alike
        for n in counts:
            results[n].append(run(model, lines, n, a.mode))
    base = statistics.median(results[counts[0]])
    print(f"CPU: {cpu_name()} ({os.cpu_count()} logical CPUs); model {os.path.basename(a.model)}; "
          f"{len(lines)} lines of {os.path.basename(a.corpus)}; mode {a.mode}; {a.repeat} repeats; "
          f"kernels {model.kernels}; max_concurrency {model.max_concurrency}")
    print()
    print("| Python threads | lines/s median | min-max | vs 1 thread |")
    print("|--:|--:|--:|--:|")
    for n in counts:
        r = results[n]
        print(f"| {n} | {statistics.median(r):,.0f} | {min(r):,.0f}-{max(r):,.0f} | "
              f"{statistics.median(r) / base:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
