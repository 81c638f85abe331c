#!/usr/bin/python3
"""bench/dask_scaling.py: lines/s of lstmlm.dask.score_text with 1 and 2 worker processes (1 thread each) on
a LocalCluster, against `lstmlm score` on the same file (--threads 1 and 2), and what Dask costs over the CLI.
Not a test. Prints a markdown table (docs/distributed.md has a run).

  PYTHONPATH=build/python /usr/bin/python3 bench/dask_scaling.py [--cli build/lstmlm] [--model DIR]
      [--corpus FILE ...] [--repeat 5] [--workers 1,2] [--lines-per-partition 500]

Each figure is the median over --repeat runs of the same job (the spread is min-max); the cluster is started
once per worker count, the model loaded on every worker before the timed runs (a warm cluster, as a long job
sees it), and every run writes the `score -v sentence --output-format jsonl` file, whose bytes are checked
against the CLI's once. The CLI runs the same file with the same output, to /dev/null.
Corpus: ../shared/data/corpora-wikitext-2/{test,valid}.txt (8,118 lines) when present, else the bundled
model's corpus ../shared/data/torch-wlm-fairytales, else a text generated from the model's vocabulary.
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "..", "shared", "data")


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def default_corpus(model, tmp):
    for d, names in (("corpora-wikitext-2", ("test.txt", "valid.txt")),
                     ("torch-wlm-fairytales", ("valid.txt", "test.txt", "train.txt"))):
        paths = [os.path.join(DATA, d, n) for n in names]
        if all(os.path.exists(p) for p in paths):
            return paths
    import json
    with open(os.path.join(model, "vocab.json"), encoding="utf-8") as f:
        words = [w for w in json.load(f) if not w.startswith("<")]
    rnd = random.Random(1)
    p = os.path.join(tmp, "generated.txt")
    with open(p, "w", encoding="utf-8") as f:
        for _ in range(8000):
            f.write(" ".join(rnd.choice(words) for _ in range(rnd.randint(5, 40))) + "\n")
    return [p]


def spread(xs):
    return f"{statistics.median(xs):,.0f} ({min(xs):,.0f}-{max(xs):,.0f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "lstmlm"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "fairytales-word"))
    ap.add_argument("--corpus", nargs="*")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--lines-per-partition", type=int, default=500)
    a = ap.parse_args()

    import distributed
    import lstmlm
    import lstmlm.dask

    tmp = tempfile.mkdtemp(prefix="lstmlm-dask-bench-")
    corpus = a.corpus or default_corpus(a.model, tmp)
    n_lines = 0
    for p in corpus:
        with open(p, "rb") as f:
            n_lines += sum(1 for _ in f)
    rows = []  # (setup, lines/s runs, tokens)

    # The CLI, same file list, same output, to /dev/null.
    cli_out = None
    for threads in (1, 2):
        rates = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            r = subprocess.run([a.cli, "score", "-m", a.model, "-v", "sentence", "--output-format", "jsonl",
                                "--threads", str(threads), *corpus], capture_output=True, check=True)
            rates.append(n_lines / (time.perf_counter() - t0))
            cli_out = r.stdout
        rows.append((f"`lstmlm score --threads {threads}`", rates))

    out = os.path.join(tmp, "out.jsonl")
    startup = {}
    dask_rows = []
    for n in [int(x) for x in a.workers.split(",")]:
        t0 = time.perf_counter()
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
        try:
            client.wait_for_workers(n)
            lstmlm.dask.warm(client, a.model)  # every worker loads the model before the timed runs
            startup[n] = time.perf_counter() - t0
            rates = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                lstmlm.dask.score_text(client, a.model, corpus, lines_per_partition=a.lines_per_partition,
                                       output=out, collect=False)
                rates.append(n_lines / (time.perf_counter() - t0))
            with open(out, "rb") as f:
                if f.read() != cli_out:
                    sys.exit("dask_scaling: the Dask output differs from the CLI's")
            dask_rows.append((f"Dask, {n} worker{'s' if n > 1 else ''} x 1 thread", rates, n))
        finally:
            client.close()
            cluster.close()

    base = {1: statistics.median(rows[0][1]), 2: statistics.median(rows[1][1])}
    kernels = lstmlm.Model(a.model, threads=1).kernels
    print(f"CPU: {cpu_name()}, {os.cpu_count()} logical cores, kernels {kernels}; "
          f"model {os.path.relpath(a.model, ROOT)}; "
          f"corpus {', '.join(os.path.relpath(p, ROOT) for p in corpus)} ({n_lines:,} lines); "
          f"lines_per_partition {a.lines_per_partition}; median (min-max) of {a.repeat} runs; "
          f"output checked byte for byte against the CLI's")
    print()
    print("| setup | lines/s | vs CLI on as many cores |")
    print("|---|---|---|")
    for name, rates, cores in [(r[0], r[1], 1 + ("--threads 2" in r[0])) for r in rows[:2]] + dask_rows:
        vs = f"{statistics.median(rates) / base[min(cores, 2)]:.2f}x" if cores in base else "-"
        print(f"| {name} | {spread(rates)} | {vs} |")
    print()
    print("Cluster start + model load on every worker (not in the figures): " +
          ", ".join(f"{n} worker{'s' if n > 1 else ''} {s:.1f} s" for n, s in startup.items()))
    med = {cores: statistics.median(rates) for _, rates, cores in dask_rows}
    if 1 in med and 2 in med:
        print(f"Dask scaling 1 -> 2 workers: {med[2] / med[1]:.2f}x")

if __name__ == "__main__":
    main()
