#!/usr/bin/python3
"""Beam search and constrained decoding against plain sampling, with `lstmlm generate` on random-weight models
of the SEED (V 554, E 100, one LSTM of 100) and MEDIUM (V 10,000, E 650, two LSTMs of 650) shapes, 1 thread:

  beam      tokens/s of --beam-size 8 --n-best 8 against --num-samples 8 (both one batch of 8 per step),
            eos off so every row runs the whole -n; SEED and MEDIUM
  allowed   MEDIUM, --num-samples 8: the cost per step of --allowed-words (1,000 of the 10,000 words)
  regex     MEDIUM, --num-samples 8: the cost per step of a --regex that refuses most words
            ("(e[a-z]* )*e[a-z]*": words that start with an e)
  compile   MEDIUM: the time a regex adds to a one-token lstmlm_beam_search through the C API, in process
            (the pattern compiled, the vocabulary's token texts made, the first row of allowed tokens over the
            10,000 words); needs BUILD/liblstmlm.so

    bench/beam_search.py [--build build] [--rounds 5] [-o rows.jsonl]

Each figure is a difference of CPU times (user + system) of whole runs (a run of -n N minus a run of -n 1,
which loads the model and runs the prompt), so process start and model load cancel; every cell runs --rounds
times in turn, and the best (the least disturbed by other processes on a shared machine), the median and the
min-max are printed. The models are written into a scratch directory, removed at the end.
"""
import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

SHAPES = {"SEED": (554, 100, 100, 1), "MEDIUM": (10000, 650, 650, 2)}
STEPS = {"SEED": 4000, "MEDIUM": 300}


def words(n, rng):
    out, seen = ["<unk>", "<eos>"], set()
    alphabet = "etaoinshrdlcumwfgypbvkjxqz"
    weights = [26 - i for i in range(26)]
    p = [w / sum(weights) for w in weights]
    while len(out) < n:
        w = "".join(rng.choice(list(alphabet), p=p, size=int(rng.integers(2, 9))))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def write_model(path, V, E, H, L, seed):
    import numpy as np
    import lstmlm.format as lf
    rng = np.random.default_rng(seed)
    t = {lf.names.embedding: rng.normal(0, 0.1, (V, E)).astype(np.float32)}
    for k in range(L):
        t[lf.names.weight_ih(k)] = rng.normal(0, 0.1, (4 * H, E if k == 0 else H)).astype(np.float32)
        t[lf.names.weight_hh(k)] = rng.normal(0, 0.1, (4 * H, H)).astype(np.float32)
        t[lf.names.bias_ih(k)] = np.zeros(4 * H, np.float32)
        t[lf.names.bias_hh(k)] = np.zeros(4 * H, np.float32)
    t[lf.names.decoder_weight] = rng.normal(0, 0.3, (V, H)).astype(np.float32)
    t[lf.names.decoder_bias] = np.zeros(V, np.float32)
    vocab = words(V, rng)
    lf.write_model(path, vocab=vocab, embedding_dim=E, layers=[lf.layer(H) for _ in range(L)], tied=False,
                   tokenizer=lf.tokenizer(unk_token="<unk>", eos_token="<eos>"), tensors=t,
                   source={"framework": "random", "exporter": "bench/beam_search.py"})
    return vocab


def run(cli, args):
    """The CPU seconds (user + system) of one `lstmlm generate` run: on a shared machine a run's CPU time
    varies far less than its wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([cli, "generate", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"lstmlm generate {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compile_times(lib_path, model_dir, regex, rounds):
    """Seconds lstmlm_beam_search(max_tokens 1, beam 1) takes with `regex` minus without, in process (the
    model loaded once): the pattern compiled, the vocabulary's token texts made and the first row of allowed
    tokens, per call; the least CPU time of 10 calls each."""
    import ctypes as C

    class Options(C.Structure):
        _fields_ = [("struct_size", C.c_size_t), ("max_tokens", C.c_int32), ("beam_size", C.c_int32),
                    ("n_best", C.c_int32), ("length_penalty", C.c_float), ("no_repeat_ngram", C.c_int32),
                    ("stop_at_eos", C.c_int32), ("regex", C.c_char_p), ("allowed_words", C.c_void_p),
                    ("n_allowed_words", C.c_size_t), ("bias_tokens", C.c_void_p), ("bias_values", C.c_void_p),
                    ("n_bias", C.c_size_t)]

    lib = C.CDLL(lib_path)
    model = C.c_void_p()
    if lib.lstmlm_model_load(model_dir.encode(), None, C.byref(model)) != 0:
        raise SystemExit(f"lstmlm_model_load: {C.c_char_p(lib.lstmlm_last_error()).value}")
    lib.lstmlm_last_error.restype = C.c_char_p

    def call(pattern):
        o = Options(C.sizeof(Options), 1, 1, 1, 0.0, 0, -1, pattern, None, 0, None, None, 0)
        h = C.c_void_p()
        t0 = time.process_time()
        if lib.lstmlm_beam_search(model, b"", 0, C.byref(o), C.byref(h)) != 0:
            raise SystemExit(f"lstmlm_beam_search: {lib.lstmlm_last_error()}")
        dt = time.process_time() - t0
        lib.lstmlm_hypotheses_free(h)
        return dt

    out = []
    for _ in range(rounds):
        plain = min(call(None) for _ in range(10))
        constrained = min(call(regex.encode()) for _ in range(10))
        out.append(constrained - plain)
    lib.lstmlm_model_free(model)
    return out


def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    cli = os.path.join(os.path.abspath(a.build), "lstmlm")
    if not os.path.exists(cli):
        raise SystemExit(f"{cli}: not built (cmake --build {a.build} --target lstmlm_cli)")
    tmp = tempfile.mkdtemp(prefix="lstmlm_beam_bench_")
    rows = []
    try:
        import numpy as np
        models, vocabs = {}, {}
        for name, (V, E, H, L) in SHAPES.items():
            models[name] = os.path.join(tmp, name)
            vocabs[name] = write_model(models[name], V, E, H, L, 1)
        allowed = os.path.join(tmp, "allowed.txt")
        rng = np.random.default_rng(2)
        with open(allowed, "w") as f:
            f.write("\n".join(rng.choice(vocabs["MEDIUM"][2:], 1000, replace=False)) + "\n")
        regex = "(e[a-z]* )*e[a-z]*"

        def base(name):
            return ["-m", models[name], "-p", " ".join(vocabs[name][2:5]), "-t", "1", "--no-stop-at-eos"]

        sample = ["--num-samples", "8", "--seed", "1"]
        beam = ["--beam-size", "8", "--n-best", "8"]
        # cell -> (model, extra args, steps)
        cells = {
            "SEED sample x8": ("SEED", sample),
            "SEED beam 8": ("SEED", beam),
            "MEDIUM sample x8": ("MEDIUM", sample),
            "MEDIUM beam 8": ("MEDIUM", beam),
            "MEDIUM sample x8 allowed 1000": ("MEDIUM", sample + ["--allowed-words", allowed]),
            "MEDIUM sample x8 regex": ("MEDIUM", sample + ["--regex", regex]),
            "MEDIUM beam 8 regex": ("MEDIUM", beam + ["--regex", regex]),
        }
        times = {c: [] for c in cells}
        lib = os.path.join(os.path.abspath(a.build), "liblstmlm.so")
        compile_s = compile_times(lib, models["MEDIUM"], regex, a.rounds) if os.path.exists(lib) else []
        for _ in range(a.rounds):
            for cell, (name, extra) in cells.items():
                n = STEPS[name]
                one = run(cli, base(name) + extra + ["-n", "1"])
                full = run(cli, base(name) + extra + ["-n", str(n)])
                times[cell].append((full - one) / (n - 1))  # seconds per step of 8 rows

        def med(v):
            return statistics.median(v)

        print(f"CPU: {cpu_name()}; 1 thread; {a.rounds} rounds; CPU time per step: best, median (min-max)")
        best = {}
        for cell, v in times.items():
            tps = [8 / s for s in v if s > 0]
            best[cell] = min(v)
            row = {"cell": cell, "ms_per_step_best": min(v) * 1e3, "ms_per_step_median": med(v) * 1e3,
                   "tokens_per_s_best": 8 / min(v)}
            rows.append(row)
            print(f"  {cell:32s} {min(v) * 1e3:8.3f} ms/step {8 / min(v):9.0f} tokens/s  median {med(v) * 1e3:.3f} ms "
                  f"({min(tps):.0f}-{max(tps):.0f} tokens/s)")
        for name in ("SEED", "MEDIUM"):
            ratio = best[f"{name} sample x8"] / best[f"{name} beam 8"]
            print(f"  {name}: beam 8 / sample x8 tokens/s = {ratio:.2f} (best over best)")
            rows.append({"cell": f"{name} beam/sample", "ratio": ratio})
        for cell in ("MEDIUM sample x8 allowed 1000", "MEDIUM sample x8 regex", "MEDIUM beam 8 regex"):
            plain = best["MEDIUM beam 8" if "beam" in cell else "MEDIUM sample x8"]
            extra = best[cell] / plain - 1
            print(f"  {cell}: {extra * 100:+.1f}% per step (best over best)")
            rows.append({"cell": cell + " cost", "fraction": extra})
        if compile_s:
            print(f"  regex compile + first row, 10,000 words: {med(compile_s) * 1e3:.2f} ms "
                  f"({min(compile_s) * 1e3:.2f}-{max(compile_s) * 1e3:.2f})")
            rows.append({"cell": "regex compile", "ms": med(compile_s) * 1e3})
        if a.output:
            with open(a.output, "w") as f:
                for r in rows:
                    f.write(json.dumps(dict(r, cpu=cpu_name())) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
