#!/usr/bin/python3
"""Load on `lstmlm serve` (and, with --fastapi, on the FastAPI + uvicorn + PyTorch server users write today,
bench/fastapi_predict.py): requests/s, tokens/s and latency percentiles at several client counts.

    bench/serve_load.py --cli build/lstmlm [--shapes SEED,MEDIUM] [--clients 1,8,64,256] [--seconds 5]
                        [--threads 2] [--precision fp32] [--fastapi] [--rate R] [-o results.jsonl]

Workloads (every request is one HTTP/1.1 keep-alive POST; each client sends its next request when the last
response is in):
  predict  /v1/predict {"context": 3-8 random words, "top": 5}
  advance  /v1/sessions/ID/advance {"ids": [one random id], "top": 5}: each client owns a session and
           advances it one token per request (a keyboard, a decoder), so 256 clients hold 256 sessions
Each runs with batching across requests on (the defaults) and off (--max-batch 1). SEED is the bundled
models/fairytales-word (V 554, E 100, H 100, 1 layer); MEDIUM a random model of V 10,000, E 650, H 650,
2 layers. The load generator runs on the same machine (asyncio, one process): on a 2-core machine it takes
a share of the CPU the server would otherwise have, so the figures are a floor. Prints one line per cell
and a Markdown table at the end; -o keeps the rows as jsonl.
"""
import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def medium_model(path, words=()):
    """A random LSTM of MEDIUM's shape; its vocabulary <unk>, <eos>, then `words`, then w0, w1, ... to 10,000."""
    import numpy as np
    import lstmlm.format as lf
    V, E, H, L = 10000, 650, 650, 2
    rng = np.random.default_rng(1)
    t = {lf.names.embedding: rng.normal(0, 0.1, (V, E)).astype(np.float32)}
    for k in range(L):
        t[lf.names.weight_ih(k)] = rng.normal(0, 0.1, (4 * H, E if k == 0 else H)).astype(np.float32)
        t[lf.names.weight_hh(k)] = rng.normal(0, 0.1, (4 * H, H)).astype(np.float32)
        t[lf.names.bias_ih(k)] = np.zeros(4 * H, np.float32)
        t[lf.names.bias_hh(k)] = np.zeros(4 * H, np.float32)
    t[lf.names.decoder_weight] = rng.normal(0, 0.1, (V, H)).astype(np.float32)
    t[lf.names.decoder_bias] = np.zeros(V, np.float32)
    vocab = (["<unk>", "<eos>"] + list(words) + [f"w{i}" for i in range(V)])[:V]
    lf.write_model(path, vocab=vocab, embedding_dim=E, layers=[lf.layer(H) for _ in range(L)], tied=False,
                   tokenizer=lf.tokenizer(unk_token="<unk>", eos_token="<eos>"), tensors=t,
                   source={"framework": "random", "exporter": "bench/serve_load.py"})
    return path


class Server:
    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        if "listening on http://" not in line:
            self.proc.kill()
            raise SystemExit(f"serve_load: the server did not start: {line.strip()}")
        self.port = int(line.strip().rsplit(":", 1)[1])
        for _ in range(600):
            if "ready" in self.proc.stderr.readline():
                break

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def post(reader, writer, path, body):
    data = json.dumps(body).encode()
    writer.write(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    head = await reader.readline()
    if not head:
        raise ConnectionResetError("the server closed the connection")
    status = int(head.split()[1])
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    payload = await reader.readexactly(length)
    return status, payload


async def client(port, make_request, schedule, latencies, errors):
    """One keep-alive connection sending make_request's requests, each when `schedule` yields its due time: None
    for at once, when the last response is in (a closed loop), or a perf_counter time (an open loop, whose
    latency counts from when the request was due, so a server that falls behind pays for its queue)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        setup = make_request.get("setup")
        state = None
        while setup and state is None:
            try:
                state = await setup(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                writer.close()
                errors.append(0)
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for due in schedule:
            if due is not None and due > time.perf_counter():
                await asyncio.sleep(due - time.perf_counter())
            path, body = make_request["next"](state)
            t0 = time.perf_counter() if due is None else due
            try:
                status, _ = await post(reader, writer, path, body)
            except (ConnectionError, asyncio.IncompleteReadError):
                writer.close()
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                errors.append(0)
                continue
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                errors.append(status)
    finally:
        writer.close()


def until(deadline):
    while time.perf_counter() < deadline:
        yield None


def run_cell(port, workload, clients, seconds, vocab_size, words, rate=0):
    rng = random.Random(clients)
    if workload == "predict":
        req = {"next": lambda _: ("/v1/predict",
                                  {"context": " ".join(rng.choice(words) for _ in range(rng.randint(3, 8))),
                                   "top": 5})}
    else:
        async def setup(reader, writer):
            status, payload = await post(reader, writer, "/v1/sessions", {})
            return json.loads(payload)["id"]
        req = {"setup": setup,
               "next": lambda sid: (f"/v1/sessions/{sid}/advance", {"ids": [rng.randrange(2, vocab_size)],
                                                                     "top": 5})}
    latencies, errors = [], []

    async def main():
        if rate:  # request i due at t0 + i / rate, on connection i % clients
            t0 = time.perf_counter() + 0.05
            n = int(rate * seconds)
            await asyncio.gather(*(client(port, req, (t0 + i / rate for i in range(k, n, clients)), latencies, errors)
                                   for k in range(clients)))
            return
        deadline = time.perf_counter() + seconds
        await asyncio.gather(*(client(port, req, until(deadline), latencies, errors) for _ in range(clients)))
    t0 = time.perf_counter()
    asyncio.run(main())
    wall = time.perf_counter() - t0
    lat = sorted(latencies)
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")  # noqa: E731
    return {"requests_per_s": len(lat) / wall, "p50_ms": q(0.50), "p99_ms": q(0.99), "requests": len(lat),
            "errors": len(errors), "mean_ms": statistics.fmean(lat) * 1000 if lat else float("nan")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "lstmlm"))
    ap.add_argument("--shapes", default="SEED,MEDIUM")
    ap.add_argument("--clients", default="1,8,64,256")
    ap.add_argument("--workloads", default="predict,advance")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", default="fp32", help="the servers' --precision (fp32, bf16 or int8)")
    ap.add_argument("--fastapi", action="store_true", help="also load bench/fastapi_predict.py (predict only)")
    ap.add_argument("--rate", type=float, default=0,
                    help="open loop: this many requests a second over the --clients connections (predict only), "
                         "latency counted from when each was due")
    ap.add_argument("-o", "--output", help="write the rows as jsonl")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="lstmlm_serve_load_")
    rows = []
    try:
        for shape in a.shapes.split(","):
            model = os.path.join(ROOT, "models", "fairytales-word") if shape == "SEED" else \
                medium_model(os.path.join(tmp, "medium"))
            with open(os.path.join(model, "vocab.json"), encoding="utf-8") as f:
                vocab = json.load(f)
            words = [w for w in vocab if not w.startswith("<")]
            servers = [("lstmlm batching", [a.cli, "serve", "-m", model, "--port", "0", "--threads", str(a.threads),
                                            "--max-queue", "100000", "--http-threads", "300",
                                            "--precision", a.precision]),
                       ("lstmlm --max-batch 1", [a.cli, "serve", "-m", model, "--port", "0", "--threads",
                                                 str(a.threads), "--max-batch", "1", "--max-queue", "100000",
                                                 "--http-threads", "300", "--precision", a.precision])]
            if a.fastapi:
                servers.append(("FastAPI + PyTorch", [sys.executable, os.path.join(ROOT, "bench", "fastapi_predict.py"),
                                                      model, "--threads", str(a.threads)]))
            for name, argv in servers:
                srv = Server(argv)
                try:
                    for workload in a.workloads.split(","):
                        if name.startswith("FastAPI") and workload != "predict":
                            continue
                        for c in (int(x) for x in a.clients.split(",")):
                            r = run_cell(srv.port, workload, c, a.seconds, len(vocab), words, a.rate)
                            r.update(shape=shape, server=name, workload=workload, clients=c, rate=a.rate)
                            rows.append(r)
                            print(json.dumps(r), flush=True)
                finally:
                    srv.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    print("\n| shape | workload | server | clients | requests/s | p50 ms | p99 ms | errors |")
    print("|---|---|---|--:|--:|--:|--:|--:|")
    for r in rows:
        print(f"| {r['shape']} | {r['workload']} | {r['server']} | {r['clients']} | {r['requests_per_s']:,.0f} | "
              f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['errors']} |")


if __name__ == "__main__":
    main()
