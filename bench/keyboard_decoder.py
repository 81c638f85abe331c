#!/usr/bin/python3
"""The C API's embedded workloads (bench/capi_bench.c) on the shapes they are for, with random weights:

  keyboard  V 10,000 (letter-string words), E 96, one LSTMP layer H 670 with projection 96, tied (the
            shape of the Gboard paper's model): per keystroke, advance one token + the top 10 completions of
            the letters typed; p50/p99 and the peak RSS, fp32 and int8, one thread.
  decoder   an icefall-shaped RNN LM, 3 LSTM layers of 2048, V 500, tied: a beam-4 decoder's LM calls at
            3.5 tokens per second of audio (4 hypotheses advanced in one lstmlm_step_batch with their log-probs);
            LM seconds per second of audio, fp32 and int8, one thread.

    bench/keyboard_decoder.py [--build build] [--rounds 3] [--keystrokes 20000] [--audio 60] [-o rows.jsonl]

Compiles bench/capi_bench.c with cc against BUILD/liblstmlm.so, writes the two models into a scratch directory
(removed at the end), runs each cell --rounds times and prints the median and the spread of each figure.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def letters_vocab(n, rng):
    words, seen = ["<unk>", "<eos>"], set()
    alphabet = "etaoinshrdlcumwfgypbvkjxqz"
    weights = [26 - i for i in range(26)]
    while len(words) < n:
        w = "".join(rng.choice(list(alphabet), p=[x / sum(weights) for x in weights], size=int(rng.integers(2, 11))))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def write_model(path, V, E, layers, P, tied, vocab, seed):
    import numpy as np
    import lstmlm.format as lf
    rng = np.random.default_rng(seed)
    t = {lf.names.embedding: rng.normal(0, 0.1, (V, E)).astype(np.float32)}
    inp = E
    for k, H in enumerate(layers):
        out = P or H
        t[lf.names.weight_ih(k)] = rng.normal(0, 0.05, (4 * H, inp)).astype(np.float32)
        t[lf.names.weight_hh(k)] = rng.normal(0, 0.05, (4 * H, out)).astype(np.float32)
        t[lf.names.bias_ih(k)] = np.zeros(4 * H, np.float32)
        t[lf.names.bias_hh(k)] = np.zeros(4 * H, np.float32)
        if P:
            t[lf.names.weight_hr(k)] = rng.normal(0, 0.05, (P, H)).astype(np.float32)
        inp = out
    if not tied:
        t[lf.names.decoder_weight] = rng.normal(0, 0.1, (V, inp)).astype(np.float32)
    t[lf.names.decoder_bias] = np.zeros(V, np.float32)
    lf.write_model(path, vocab=vocab, embedding_dim=E, layers=[lf.layer(H, P) for H in layers], tied=tied,
                   tokenizer=lf.tokenizer(unk_token="<unk>", eos_token="<eos>"), tensors=t,
                   source={"framework": "random", "exporter": "bench/keyboard_decoder.py"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keystrokes", type=int, default=20000)
    ap.add_argument("--audio", type=float, default=60.0)
    ap.add_argument("--precisions", default="fp32,int8")
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    import numpy as np
    lib = os.path.join(os.path.abspath(a.build), "liblstmlm.so")
    if not os.path.exists(lib):
        raise SystemExit(f"keyboard_decoder: no {lib}: build the project first (cmake --build {a.build})")
    tmp = tempfile.mkdtemp(prefix="lstmlm_kbd_")
    try:
        exe = os.path.join(tmp, "capi_bench")
        subprocess.run(["cc", "-O2", "-std=c99", "-Wall", "-Werror", "-I", os.path.join(ROOT, "include"),
                        os.path.join(ROOT, "bench", "capi_bench.c"), "-o", exe, lib,
                        "-Wl,-rpath," + os.path.dirname(lib)], check=True)
        rng = np.random.default_rng(5)
        kbd, dec = os.path.join(tmp, "keyboard"), os.path.join(tmp, "decoder")
        write_model(kbd, 10000, 96, [670], 96, True, letters_vocab(10000, rng), 1)
        write_model(dec, 500, 2048, [2048, 2048, 2048], 0, True, ["<unk>", "<eos>"] + [f"b{i}" for i in range(498)], 2)
        rows = []
        for prec in a.precisions.split(","):
            for workload, model, n in (("keyboard", kbd, a.keystrokes), ("decoder", dec, a.audio)):
                for r in range(a.rounds):
                    out = subprocess.run([exe, workload, model, prec, str(n)], check=True, capture_output=True,
                                         text=True).stdout
                    row = json.loads(out)
                    row["round"] = r
                    rows.append(row)
                    print(out.strip(), flush=True)
        if a.output:
            with open(a.output, "w") as f:
                for row in rows:
                    f.write(json.dumps(row) + "\n")
        print("\n| workload | precision | figure | median | min..max |\n|---|---|---|--:|--:|")
        for prec in a.precisions.split(","):
            for workload, figures in (("keyboard", [("keystroke", "p50_us"), ("keystroke", "p99_us"),
                                                    ("complete", "p99_us"), (None, "peak_rss_kb")]),
                                      ("decoder", [(None, "lm_s_per_audio_s"), ("beam_step", "p50_us"),
                                                   (None, "peak_rss_kb")])):
                cell = [r for r in rows if r["workload"] == workload and r["precision"] == prec]
                for part, key in figures:
                    vals = [(r[part][key] if part else r[key]) for r in cell]
                    name = f"{part} {key}" if part else key
                    print(f"| {workload} | {prec} | {name} | {statistics.median(vals):.4g} | "
                          f"{min(vals):.4g}..{max(vals):.4g} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
