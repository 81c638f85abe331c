#!/usr/bin/python3
"""A loopback soak of `lstmlm serve`: for --minutes (10), N clients (16) send predict, score, generate and
session requests, 5% of them malformed (bad JSON, wrong types, unknown fields, invalid UTF-8, a body cut
short) and 2% dropped mid-request or mid-stream; every response must be a 200 or the one-line JSON error of
its status, and the server must stay up. Reports the requests by outcome and the server's resident memory
(VmRSS) after the first minute and at the end: growth past 5% is a failure (exit 1).

    bench/serve_soak.py --cli build/lstmlm [--model models/fairytales-word] [--minutes 10] [--clients 16]

Traffic goes only to 127.0.0.1; the loop is bounded in time and stops by itself."""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kb(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def exchange(port, raw, drop=False, timeout=30):
    """Sends raw bytes; returns (status, body) or None when dropped on purpose."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        if drop:
            s.sendall(raw[:max(1, len(raw) // 2)])
            return None
        s.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        status = int(head.split()[1])
        length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")),
                      None)
        if length is None:  # chunked (a stream): read to the end
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
        else:
            while len(body) < length:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
        return status, body
    finally:
        s.close()


def request(path, body, close=True):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + (b"Connection: close\r\n" if close else b"") + b"Content-Length: " + str(len(data)).encode()
            + b"\r\n\r\n" + data)


BAD = [b"{", b"[1]", b'{"text": 5}', b'{"contxt": "a"}', b'{"text": "caf\xe9"}', b'{"top": "x", "context": "a"}']


def worker(port, words, deadline, rng, counts, failures, lock):
    sid = None
    while time.monotonic() < deadline:
        r = rng.random()
        kind = rng.choice(["predict", "score", "generate", "session"])
        ctx = " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
        if r < 0.05:
            raw, want = request(rng.choice(["/v1/predict", "/v1/score", "/v1/generate"]), rng.choice(BAD)), 400
        elif kind == "predict":
            raw, want = request("/v1/predict", {"context": ctx, "top": 5}), 200
        elif kind == "score":
            raw, want = request("/v1/score", {"text": ctx + "\n" + ctx}), 200
        elif kind == "generate":
            raw, want = request("/v1/generate", {"prompt": ctx, "max_tokens": 20, "stream": rng.random() < 0.5,
                                                 "seed": rng.randrange(1000)}), 200
        else:
            if sid is None:
                res = exchange(port, request("/v1/sessions", {}))
                sid = json.loads(res[1])["id"] if res and res[0] == 200 else None
                continue
            raw, want = request(f"/v1/sessions/{sid}/advance", {"text": ctx, "top": 3}), 200
        drop = rng.random() < 0.02
        try:
            res = exchange(port, raw, drop=drop)
        except OSError as e:
            with lock:
                failures.append(f"{kind}: {e}")
            continue
        with lock:
            if res is None:
                counts["dropped"] = counts.get("dropped", 0) + 1
                continue
            status, body = res
            key = f"{status}"
            counts[key] = counts.get(key, 0) + 1
            if status != want and not (status == 404 and kind == "session"):
                failures.append(f"{kind}: status {status}, wanted {want}: {body[:200]!r}")
            if status != 200:
                try:
                    e = json.loads(body)["error"]
                    assert e["code"] == status and "\n" not in e["message"]
                except Exception:
                    failures.append(f"{kind}: {status} without the JSON error: {body[:200]!r}")
            if status == 404:
                sid = None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "lstmlm"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "fairytales-word"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    proc = subprocess.Popen([a.cli, "serve", "-m", a.model, "--port", "0", "--threads", str(a.threads),
                             "--max-sessions", "64", "--timeout", "5"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    port = int(proc.stderr.readline().strip().rsplit(":", 1)[1])
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    time.sleep(1)
    with open(os.path.join(a.model, "vocab.json"), encoding="utf-8") as f:
        words = [w for w in json.load(f) if not w.startswith("<")]
    counts, failures, lock = {}, [], threading.Lock()
    start = time.monotonic()
    deadline = start + 60 * a.minutes
    threads = [threading.Thread(target=worker, args=(port, words, deadline, random.Random(i), counts, failures, lock))
               for i in range(a.clients)]
    for t in threads:
        t.start()
    time.sleep(min(60, 30 * a.minutes))
    rss_first = rss_kb(proc.pid)
    for t in threads:
        t.join()
    rss_end = rss_kb(proc.pid)
    alive = proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=60)
    growth = (rss_end - rss_first) / rss_first * 100 if rss_first else float("nan")
    print(json.dumps({"minutes": a.minutes, "clients": a.clients, "responses": counts, "failures": len(failures),
                      "rss_kb_after_1_min": rss_first, "rss_kb_end": rss_end, "rss_growth_pct": round(growth, 2),
                      "alive_at_end": alive, "exit_status": rc}))
    for f in failures[:10]:
        print("failure:", f, file=sys.stderr)
    ok = alive and rc == 0 and not failures and growth <= 5
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
