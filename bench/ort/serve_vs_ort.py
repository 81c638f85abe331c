#!/usr/bin/python3
"""`lstmlm serve` against the server a user writes around ONNX Runtime (bench/ort/ort_server.js: Node's http
and onnxruntime-node), on the same model and the same POST /v1/predict {"context": ..., "top": 10}, loaded by
the same generator (Debian's hey) at each client count: requests/s, p50 and p99, and the server's CPU time per
request (user + system time of its process over the run, /proc/PID/stat, divided by the requests answered).

    bench/ort/serve_vs_ort.py [--lstmlm build/lstmlm] [--models SEED,MEDIUM] [--clients 1,8,64]
                              [--seconds 10] [--rounds 3] [--threads 2] [-o rows.jsonl]

SEED is the bundled models/fairytales-word, MEDIUM a random model of V 10,000, E 650, 2 x 650
(bench/serve_load.py's). Each model is exported to ONNX from its own weights (bench/ort/export_onnx.py --from-dir,
checked against lstmlm) and both servers' answers to the request are compared (the same ids, log-probs to 1e-4)
before any load. Both servers get --threads cores (lstmlm serve --threads, ORT's intra-op threads); the cells run
in turn, lstmlm then ORT, --rounds times; every figure is the median over rounds with the min-max beside it, and
the ratio is taken per round. hey runs on the same machine: on 2 cores it takes a share of the CPU the servers
would otherwise have, so the figures are a floor for both. Installs hey (apt) and onnxruntime-node (npm, into
~/.cache/lstmlm/ort) when missing."""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "bench"))
from ort_env import ensure_ort  # noqa: E402
from serve_load import Server, medium_model  # noqa: E402

PYTHON = "/usr/bin/python3"
CONTEXTS = {"SEED": "the old man", "MEDIUM": "w1 w2 w3 w4 w5"}


def log(msg):
    print(f"serve_vs_ort: {msg}", file=sys.stderr, flush=True)


def cpu_seconds(pid):
    """User + system time of a process and its threads so far (clock ticks of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hey(url, body, clients, seconds):
    """hey's summary: requests/s, p50 and p99 in ms, the responses and how many were not 200."""
    res = subprocess.run(["hey", "-z", f"{seconds}s", "-c", str(clients), "-m", "POST", "-T", "application/json",
                          "-d", body, url], capture_output=True, text=True, check=True)
    out = res.stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    pct = {int(p): float(s) * 1000 for p, s in re.findall(r"(\d+)%+ in ([\d.]+) secs", out)}
    codes = {int(c): int(n) for c, n in re.findall(r"\[(\d+)\]\s+(\d+) responses", out)}
    return {"rps": rps, "p50_ms": pct.get(50), "p99_ms": pct.get(99), "responses": sum(codes.values()),
            "not_200": sum(n for c, n in codes.items() if c != 200)}


def post(port, body):
    res = subprocess.run(["curl", "-s", "-X", "POST", "-H", "Content-Type: application/json", "-d", body,
                          f"http://127.0.0.1:{port}/v1/predict"], capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


def same_answer(a, b):
    """Both servers name the same ids in the same order with log-probs within 1e-4."""
    ids = lambda r: [t["id"] for t in r["top"]]
    return ids(a) == ids(b) and all(abs(x["logprob"] - y["logprob"]) <= 1e-4 for x, y in zip(a["top"], b["top"]))


def med(xs, digits=2):
    """The median of the figures hey printed ("-" when it printed none: a percentile of too few responses)."""
    xs = [x for x in xs if x is not None]
    return f"{statistics.median(xs):.{digits}f}" if xs else "-"


def fmt(xs, digits=0):
    med = statistics.median(xs)
    return f"{med:,.{digits}f} ({min(xs):,.{digits}f}-{max(xs):,.{digits}f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lstmlm", default=os.path.join(ROOT, "build", "lstmlm"))
    ap.add_argument("--models", default="SEED,MEDIUM")
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-o", "--output", help="the rows as jsonl")
    a = ap.parse_args()
    if subprocess.run(["sh", "-c", "command -v hey"], capture_output=True).returncode != 0:
        if os.geteuid() != 0:
            sys.exit("serve_vs_ort: please install hey (apt-get install hey)")
        subprocess.run(["apt-get", "install", "-y", "-q", "hey"], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    node_path = ensure_ort(os.path.join(cache, "lstmlm", "ort"), log)
    python_dir = os.path.join(os.path.dirname(os.path.abspath(a.lstmlm)), "python")
    cpu = next((l.split(":", 1)[1].strip() for l in subprocess.run(["lscpu"], capture_output=True, text=True)
                .stdout.splitlines() if l.startswith("Model name:")), "?")
    rows, tmp = [], tempfile.mkdtemp(prefix="lstmlm_serve_ort_")
    try:
        run(a, rows, tmp, node_path, python_dir, cpu)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(a, rows, cpu)


def run(a, rows, tmp, node_path, python_dir, cpu):
    """Every cell: both servers of a model up, each client count in turn, lstmlm then ORT, --rounds times."""
    clients = [int(c) for c in a.clients.split(",")]
    for name in a.models.split(","):
        src = os.path.join(ROOT, "models", "fairytales-word") if name == "SEED" else \
            medium_model(os.path.join(tmp, "medium"))
        out = os.path.join(tmp, name.lower())
        check = subprocess.run([PYTHON, os.path.join(HERE, "export_onnx.py"), "--from-dir", src, "--out", out,
                                "--lstmlm-python", python_dir, "--node-path", node_path],
                               capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        log(f"{name}: exported and checked: {check}")
        body = json.dumps({"context": CONTEXTS[name], "top": 10})
        servers = {
            "lstmlm": Server([a.lstmlm, "serve", "-m", src, "--port", "0", "--threads", str(a.threads)]),
            "ort": Server(["env", f"NODE_PATH={node_path}", "node", os.path.join(HERE, "ort_server.js"), src,
                           os.path.join(out, "predict.onnx"), "--port", "0", "--threads", str(a.threads)]),
        }
        try:
            answers = {k: post(s.port, body) for k, s in servers.items()}
            if not same_answer(answers["lstmlm"], answers["ort"]):
                sys.exit(f"serve_vs_ort: {name}: the servers answer differently: {answers}")
            for c in clients:
                for rnd in range(a.rounds):
                    for side, s in servers.items():
                        t0 = cpu_seconds(s.proc.pid)
                        r = hey(f"http://127.0.0.1:{s.port}/v1/predict", body, c, a.seconds)
                        r["cpu_us_per_request"] = (cpu_seconds(s.proc.pid) - t0) / max(r["responses"], 1) * 1e6
                        r.update(model=name, side=side, clients=c, round=rnd, threads=a.threads, cpu=cpu)
                        rows.append(r)
                        log(json.dumps(r))
        finally:
            for s in servers.values():
                s.stop()


def report(a, rows, cpu):
    """rows to -o's jsonl, and the table on stdout."""
    clients = [int(c) for c in a.clients.split(",")]
    if a.output:
        with open(a.output, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    print(f"CPU: {cpu}; servers on {a.threads} threads; hey on the same machine; {a.seconds} s a cell, "
          f"{a.rounds} rounds, median (min-max).\n")
    print("| model | clients | lstmlm req/s | ORT req/s | ratio | lstmlm p50 / p99 ms | ORT p50 / p99 ms "
          "| lstmlm CPU µs/request | ORT CPU µs/request | errors |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name in a.models.split(","):
        for c in clients:
            get = lambda side, k: [r[k] for r in rows if (r["model"], r["side"], r["clients"]) == (name, side, c)]
            ratio = [x / y for x, y in zip(get("lstmlm", "rps"), get("ort", "rps"))]
            errs = sum(get("lstmlm", "not_200")) + sum(get("ort", "not_200"))
            print(f"| {name} | {c} | {fmt(get('lstmlm', 'rps'))} | {fmt(get('ort', 'rps'))} | {fmt(ratio, 2)} "
                  f"| {med(get('lstmlm', 'p50_ms'))} / {med(get('lstmlm', 'p99_ms'))} "
                  f"| {med(get('ort', 'p50_ms'))} / {med(get('ort', 'p99_ms'))} "
                  f"| {fmt(get('lstmlm', 'cpu_us_per_request'))} | {fmt(get('ort', 'cpu_us_per_request'))} | {errs} |")


if __name__ == "__main__":
    main()
