#!/usr/bin/python3
"""Peak and resident memory of a loaded model in every front end: the CLI (`lstmlm predict`), the server
(`lstmlm serve`), the Python module and the C API, at fp32, bf16 and int8, on two shapes with random weights:

  MEDIUM   V 10,000, E 650, 2 LSTM layers of 650, untied (PTB medium; a 79 MB weights file)
  decoder  an icefall-shaped RNN LM: V 500, E 2048, 3 LSTM layers of 2048, tied (a 210 MB weights file)

    bench/memory.py [--build build] [--before OTHER_BUILD] [--shapes MEDIUM,decoder] [--precisions fp32,bf16,int8]
                    [--frontends cli,server,python,capi] [-o rows.jsonl]

Each cell is its own process: its baseline (resident before the model is loaded: the CLI's and the server's
own start-up, the interpreter with numpy, the C program), its peak (VmHWM, or the CLI's ru_maxrss) and its
resident size after the load and one predict. "packed" is what the server's /v1/models reports as the model's
memory at that precision (the packed weights and what the model keeps besides); "x packed" is
(peak - baseline) / packed, the figure the 1.3x bound is about. --before runs the same cells on another build
(its lstmlm, liblstmlm.so and python/) and prints both. Weights files are written to a scratch directory and
removed at the end.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

SHAPES = {"MEDIUM": (10000, 650, [650, 650], False), "decoder": (500, 2048, [2048, 2048, 2048], True)}

CAPI_SOURCE = r"""
#include <lstmlm/lstmlm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static long status_kb(const char* key) {
  char line[256];
  long kb = -1;
  FILE* f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, strlen(key)) == 0) kb = strtol(line + strlen(key), NULL, 10);
  if (f) fclose(f);
  return kb;
}
int main(int argc, char** argv) {
  lstmlm_model_options opt = LSTMLM_MODEL_OPTIONS_INIT;
  lstmlm_model* m = NULL;
  lstmlm_state* s = NULL;
  int32_t token = 1;
  float lp = 0;
  long base = status_kb("VmRSS:");
  if (argc != 3) return 2;
  opt.threads = 1;
  opt.precision = strcmp(argv[2], "int8") == 0   ? LSTMLM_PRECISION_INT8
                  : strcmp(argv[2], "bf16") == 0 ? LSTMLM_PRECISION_BF16
                                                 : LSTMLM_PRECISION_FP32;
  if (lstmlm_model_load(argv[1], &opt, &m) != LSTMLM_OK || lstmlm_state_new(m, 1, &s) != LSTMLM_OK ||
      lstmlm_step_batch(m, &s, &token, 1, NULL) != LSTMLM_OK || lstmlm_state_logprob(m, s, 2, &lp) != LSTMLM_OK) {
    fprintf(stderr, "capi: %s\n", lstmlm_last_error());
    return 1;
  }
  printf("{\"baseline_kb\": %ld, \"peak_kb\": %ld, \"resident_kb\": %ld}\n", base, status_kb("VmHWM:"),
         status_kb("VmRSS:"));
  lstmlm_state_free(s);
  lstmlm_model_free(m);
  return 0;
}
"""

PY_SOURCE = r"""
import sys
def kb(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])
import numpy  # noqa: F401
import lstmlm
base = kb("VmRSS:")
m = lstmlm.Model(sys.argv[1], threads=1, precision=sys.argv[2])
m.predict("t1 t2", top=5)
print('{"baseline_kb": %d, "peak_kb": %d, "resident_kb": %d}' % (base, kb("VmHWM:"), kb("VmRSS:")))
"""


def write_shape(path, shape):
    from keyboard_decoder import write_model
    V, E, layers, tied = SHAPES[shape]
    write_model(path, V, E, layers, 0, tied, ["<unk>", "<eos>"] + [f"t{i}" for i in range(1, V - 1)], 3)


def proc_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return -1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary_baseline_kb(build):
    """The CLI's and the server's baseline: the binary doing nothing with a model (its start-up, libraries)."""
    base = subprocess.run(["/usr/bin/time", "-f", "%M", os.path.join(build, "lstmlm"), "--version"],
                          capture_output=True, text=True)
    return int(base.stderr.strip().splitlines()[-1])


def cli_cell(build, model, prec):
    exe = os.path.join(build, "lstmlm")
    run = subprocess.run(["/usr/bin/time", "-f", "%M", exe, "predict", "-m", model, "--precision", prec, "--threads",
                          "1", "--top", "5"], input="t1 t2\n", capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"memory: cli {prec}: {run.stderr.strip()}")
    peak = int(run.stderr.strip().splitlines()[-1])
    return {"baseline_kb": binary_baseline_kb(build), "peak_kb": peak, "resident_kb": None}


def server_cell(build, model, prec):
    port = free_port()
    p = subprocess.Popen([os.path.join(build, "lstmlm"), "serve", "-m", model, "--precision", prec, "--threads", "1",
                          "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = binary_baseline_kb(build)
        url = f"http://127.0.0.1:{port}"
        for _ in range(1200):
            try:
                info = json.loads(urllib.request.urlopen(url + "/v1/models", timeout=5).read())
                break
            except OSError:
                if p.poll() is not None:
                    raise SystemExit(f"memory: the server exited ({p.returncode})")
                time.sleep(0.05)
        req = urllib.request.Request(url + "/v1/predict", data=json.dumps({"context": "t1 t2", "top": 5}).encode(),
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=60).read()
        models = info.get("models", [info])
        packed = models[0].get("memory_bytes") if isinstance(models, list) and models else None
        return {"baseline_kb": base, "peak_kb": proc_kb(p.pid, "VmHWM:"), "resident_kb": proc_kb(p.pid, "VmRSS:"),
                "packed_bytes": packed}
    finally:
        p.terminate()
        p.wait(timeout=30)


def python_cell(build, model, prec):
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    run = subprocess.run([sys.executable, "-c", PY_SOURCE, model, prec], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise SystemExit(f"memory: python {prec}: {run.stderr.strip()}")
    return json.loads(run.stdout)


def capi_cell(exe, model, prec):
    run = subprocess.run([exe, model, prec], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"memory: capi {prec}: {run.stderr.strip()}")
    return json.loads(run.stdout)


def compile_capi(build, tmp, tag):
    src = os.path.join(tmp, "capi_memory.c")
    with open(src, "w") as f:
        f.write(CAPI_SOURCE)
    exe = os.path.join(tmp, f"capi_memory_{tag}")
    lib = os.path.join(os.path.abspath(build), "liblstmlm.so")
    subprocess.run(["cc", "-O2", "-std=c99", "-Wall", "-Werror", "-I", os.path.join(ROOT, "include"), src, "-o", exe,
                    lib, "-Wl,-rpath," + os.path.dirname(lib)], check=True)
    return exe


def mb(kb):
    return "" if kb is None else f"{kb / 1024:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--before", help="another build to measure the same cells on (e.g. main's)")
    ap.add_argument("--shapes", default="MEDIUM,decoder")
    ap.add_argument("--precisions", default="fp32,bf16,int8")
    ap.add_argument("--frontends", default="cli,server,python,capi")
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    builds = [("after", a.build)] + ([("before", a.before)] if a.before else [])
    fronts = a.frontends.split(",")
    tmp = tempfile.mkdtemp(prefix="lstmlm_mem_")
    rows = []
    try:
        capi = {tag: compile_capi(b, tmp, tag) for tag, b in builds} if "capi" in fronts else {}
        for shape in a.shapes.split(","):
            model = os.path.join(tmp, shape)
            write_shape(model, shape)
            file_mb = os.path.getsize(os.path.join(model, "weights.safetensors")) / 2**20
            for prec in a.precisions.split(","):
                packed = {}
                for tag, build in builds:
                    for front in ["server"] + [f for f in fronts if f != "server"]:
                        if front == "cli":
                            cell = cli_cell(build, model, prec)
                        elif front == "server":
                            cell = server_cell(build, model, prec)
                            packed[tag] = cell.pop("packed_bytes")
                            if front not in fronts:
                                continue
                        elif front == "python":
                            cell = python_cell(build, model, prec)
                        else:
                            cell = capi_cell(capi[tag], model, prec)
                        cell.update(shape=shape, precision=prec, frontend=front, build=tag, file_mb=round(file_mb, 1),
                                    packed_bytes=packed.get(tag))
                        rows.append(cell)
                        print(json.dumps(cell), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.output:
        with open(a.output, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    print("\n| shape | precision | front end | build | packed MiB | baseline MiB | peak MiB | resident MiB | x packed |")
    print("|---|---|---|---|--:|--:|--:|--:|--:|")
    for r in rows:
        packed = r["packed_bytes"]
        ratio = f"{(r['peak_kb'] - r['baseline_kb']) * 1024 / packed:.2f}" if packed else ""
        print(f"| {r['shape']} | {r['precision']} | {r['frontend']} | {r['build']} | "
              f"{packed / 2**20 if packed else 0:.0f} | {mb(r['baseline_kb'])} | {mb(r['peak_kb'])} | "
              f"{mb(r['resident_kb'])} | {ratio} |")


if __name__ == "__main__":
    main()
