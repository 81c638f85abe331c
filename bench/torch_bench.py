#!/usr/bin/python3
"""PyTorch side of bench/compare: the same workloads as `lstmlm bench` on random weights of a shape.

nn.Embedding + nn.LSTM (nn.GRU with --cell gru) + nn.Linear + log_softmax under torch.inference_mode().
Each cell runs in eager mode and as TorchScript (traced, frozen) and reports the better of the two: the
comparison is against the best this framework does, not its slowest path. Prints one JSON object per
cell (jsonl), with the keys of `lstmlm bench -o jsonl` that bench/compare reads.

Precisions (--precision; every row carries "precision", and "qengine" for int8):
  fp32  everything in float32 (the default).
  bf16  the model's weights (embedding table, LSTM, decoder) cast to torch.bfloat16 with .to(); the
        embedding output, the LSTM (inputs, states, gates) and the decoder matmul run in bf16; the
        decoder's bf16 logits are cast to float32 before log_softmax (and the gather / exp / multinomial
        of generate), as bench/onednn_bench.cpp --precision bf16 does.
  int8  torch.ao.quantization.quantize_dynamic(model, {nn.LSTM, nn.Linear}, dtype=torch.qint8): LSTM and
        decoder weights int8 (per tensor), activations quantized per call (dynamic), int8 GEMMs with
        int32 accumulation and float32 output; the embedding and log_softmax stay float32. The quantized
        engine is the first of onednn, x86, fbgemm, qnnpack that torch.backends.quantized.supported_engines
        lists (Debian's torch has no fbgemm); the row names the one that ran.

Workloads (per call, B rows of T tokens):
  score    log-probs at every step, the target's gathered            tokens/call = B*T
  predict  log-probs after the last step only                        tokens/call = B*T
  generate T steps of one token, log_softmax + multinomial draw       tokens/call = B*T
"""
import argparse
import copy
import json
import statistics
import sys
import time

import torch
from torch import nn


GATES = {"lstm": 4, "gru": 3}


class LM(nn.Module):
    """The model; `lstm` is the recurrent module whatever the cell (--cell gru: nn.GRU, PyTorch's
    reset-after GRU, whose state is h alone)."""

    def __init__(self, V, E, H, L, cell="lstm"):
        super().__init__()
        self.cell = cell
        self.embedding = nn.Embedding(V, E)
        self.lstm = (nn.GRU if cell == "gru" else nn.LSTM)(E, H, L, batch_first=True)
        self.decoder = nn.Linear(H, V)


PRECISION_NOTES = {
    "fp32": "fp32",
    "bf16": "bf16 weights, embedding output, LSTM and decoder matmul; fp32 log_softmax",
    "int8": "int8 dynamic quantization of LSTM and decoder (qint8 weights, per-call activation scales); "
            "fp32 embedding and log_softmax",
}
QENGINES = ("onednn", "x86", "fbgemm", "qnnpack")


def pick_qengine():
    """The first of QENGINES this torch supports, set as the quantized engine; None when none is."""
    supported = torch.backends.quantized.supported_engines
    for e in QENGINES:
        if e in supported:
            torch.backends.quantized.engine = e
            return e
    return None


def with_precision(lm, precision):
    """(model, dtype of its floating activations) for a precision; lm is the fp32 model (left as it is)."""
    if precision == "bf16":
        return copy.deepcopy(lm).to(torch.bfloat16).eval(), torch.bfloat16
    if precision == "int8":
        q = torch.ao.quantization.quantize_dynamic(lm, {nn.LSTM, nn.GRU, nn.Linear}, dtype=torch.qint8)
        return q.eval(), torch.float32
    return lm, torch.float32


class Score(nn.Module):
    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, x, y):
        h, _ = self.lm.lstm(self.lm.embedding(x))
        logp = torch.log_softmax(self.lm.decoder(h).float(), dim=-1)
        return logp.gather(2, y.unsqueeze(2)).squeeze(2)


class Predict(nn.Module):
    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, x):
        h, _ = self.lm.lstm(self.lm.embedding(x))
        return torch.log_softmax(self.lm.decoder(h[:, -1]).float(), dim=-1)


class Step(nn.Module):
    """One generation step: token ids [B, 1] and state -> log-probs [B, V] and the new state."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, x, h0, c0):
        if self.lm.cell == "gru":  # no c: c0 passes through unchanged
            h, h1 = self.lm.lstm(self.lm.embedding(x), h0)
            c1 = c0
        else:
            h, (h1, c1) = self.lm.lstm(self.lm.embedding(x), (h0, c0))
        return torch.log_softmax(self.lm.decoder(h[:, -1]).float(), dim=-1), h1, c1


def flops_per_call(V, E, H, L, workload, B, T, cell="lstm"):
    """Same nominal count as lstmlm::bench::flops_per_call (see docs/performance.md)."""
    lstm = sum(2 * GATES[cell] * H * ((E if k == 0 else H) + H) for k in range(L))
    proj = 2 * H * V
    if workload == "predict":
        return B * T * lstm + B * proj
    return B * T * (lstm + proj)


def percentile(xs, p):
    xs = sorted(xs)
    pos = p / 100 * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def make_call(lm, workload, mode, B, T, V, H, L, gen, act_dtype=torch.float32):
    x = torch.randint(0, V, (B, T), generator=gen)
    y = torch.randint(0, V, (B, T), generator=gen)
    if workload == "score":
        m = Score(lm).eval()
        if mode == "torchscript":
            m = torch.jit.freeze(torch.jit.trace(m, (x, y)))
        return lambda: m(x, y)
    if workload == "predict":
        m = Predict(lm).eval()
        if mode == "torchscript":
            m = torch.jit.freeze(torch.jit.trace(m, (x,)))
        return lambda: m(x)
    step = Step(lm).eval()
    h0 = torch.zeros(L, B, H, dtype=act_dtype)
    c0 = torch.zeros(L, B, H, dtype=act_dtype)
    first = x[:, :1].contiguous()
    if mode == "torchscript":
        step = torch.jit.freeze(torch.jit.trace(step, (first, h0, c0)))
    sample_gen = torch.Generator().manual_seed(1)

    def generate():
        tok, h, c = first, h0, c0
        for _ in range(T):
            logp, h, c = step(tok, h, c)
            tok = torch.multinomial(logp.exp(), 1, generator=sample_gen)
        return tok

    return generate


def run_cell(lm, shape, workload, mode, B, T, threads, reps, warmup, min_time, seed, precision="fp32",
             act_dtype=torch.float32, qengine=None):
    torch.set_num_threads(threads)
    V, E, H, L = shape
    gen = torch.Generator().manual_seed(seed)
    with torch.inference_mode():
        call = make_call(lm, workload, mode, B, T, V, H, L, gen, act_dtype)
        for _ in range(warmup):
            call()
        lat, rep_tps = [], []
        for _ in range(reps):
            n, spent = 0, 0.0
            while spent < min_time or n == 0:
                t0 = time.perf_counter()
                call()
                dt = time.perf_counter() - t0
                lat.append(dt)
                spent += dt
                n += 1
            rep_tps.append(n * B * T / spent)
    mean = statistics.fmean(rep_tps)
    total_calls = len(lat)
    mean_call = sum(lat) / total_calls
    row = {
        "model": "pytorch-" + mode,
        "shape": f"V={V} E={E} H={H}x{L}" + ("" if lm_cell(lm) == "lstm" else " " + lm_cell(lm)),
        "workload": workload,
        "batch": B,
        "length": T,
        "threads": threads,
        "repetitions": reps,
        "calls": total_calls,
        "tokens_per_call": B * T,
        "tokens_per_s": mean,
        "tokens_per_s_sd": statistics.stdev(rep_tps) if len(rep_tps) > 1 else 0.0,
        "tokens_per_s_median": statistics.median(rep_tps),
        "calls_per_s": mean / (B * T),
        "latency_p50_us": percentile(lat, 50) * 1e6,
        "latency_p99_us": percentile(lat, 99) * 1e6,
        "gflops": flops_per_call(V, E, H, L, workload, B, T, lm_cell(lm)) / mean_call * 1e-9,
        "isa": cpu_capability(),
        "build": f"torch {torch.__version__} {blas_library()}",
        "note": mode,
        "precision": precision,
        "precision_detail": PRECISION_NOTES[precision],
    }
    if qengine:
        row["qengine"] = qengine
    return row


def lm_cell(lm):
    return getattr(lm, "cell", "lstm")


def cpu_capability():
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            return line.split(":", 1)[1].strip().lower()
    return ""


def blas_library():
    """The BLAS the process has mapped: Debian's torch takes whatever libblas.so.3 points to, and the
    reference BLAS there would make PyTorch 5-9x slower, which would flatter lstmlm."""
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))
    with open("/proc/self/maps") as f:
        maps = f.read()
    for name in ("openblas", "mkl", "blis"):
        if name in maps:
            return name
    return "reference-blas" if "libblas" in maps else "unknown-blas"


def ints(s):
    return [int(v) for v in s.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", required=True, help="V,E,H,L")
    ap.add_argument("-w", "--workload", default="score,predict,generate")
    ap.add_argument("-b", "--batch", default="1")
    ap.add_argument("-s", "--length", default="32")
    ap.add_argument("-t", "--threads", default="1")
    ap.add_argument("-r", "--repetitions", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--min-time", type=float, default=0.1, help="seconds per repetition (at least one call)")
    ap.add_argument("--modes", default="eager,torchscript")
    ap.add_argument("--all-modes", action="store_true", help="print every mode, not only the best per cell")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cell", default="lstm", choices=sorted(GATES), help="the recurrent cell (gru: nn.GRU)")
    ap.add_argument("--precision", default="fp32", choices=sorted(PRECISION_NOTES),
                    help="fp32, bf16 or int8 (dynamic quantization); see above")
    a = ap.parse_args()
    shape = tuple(ints(a.shape))
    if len(shape) != 4:
        ap.error("--shape needs V,E,H,L")
    torch.manual_seed(a.seed)
    qengine = None
    if a.precision == "int8":
        qengine = pick_qengine()
        if qengine is None:
            sys.exit("torch_bench: no quantized engine (supported: "
                     f"{', '.join(torch.backends.quantized.supported_engines)})")
    lm, act_dtype = with_precision(LM(*shape, cell=a.cell).eval(), a.precision)
    for w in a.workload.split(","):
        for t in ints(a.threads):
            for b in ints(a.batch):
                for s in ints(a.length):
                    rows = []
                    for m in a.modes.split(","):
                        try:
                            rows.append(run_cell(lm, shape, w, m, b, s, t, a.repetitions, a.warmup, a.min_time,
                                                 a.seed, a.precision, act_dtype, qengine))
                        except RuntimeError as e:  # e.g. a mode this precision cannot trace: the others stand
                            print(f"torch {a.precision} {w} b={b} s={s} t={t} {m}: failed: "
                                  f"{str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
                    if not rows:
                        sys.exit(f"torch_bench: {a.precision} {w} b={b} s={s} t={t}: no mode ran")
                    print(f"torch {a.precision} {w} b={b} s={s} t={t}: " +
                          ", ".join(f"{r['note']} {r['tokens_per_s_median']:.0f} tok/s" for r in rows),
                          file=sys.stderr)
                    if not a.all_modes:
                        rows = [max(rows, key=lambda r: r["tokens_per_s_median"])]
                    for r in rows:
                        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
