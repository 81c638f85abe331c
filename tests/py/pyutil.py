"""Shared helpers of the Python tests: paths, the import path of the package lstmlm, running convert.py and the
CLI."""
import atexit
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("LSTMLM_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("LSTMLM_CLI", "")
TOOLS = os.path.join(SOURCE_DIR, "tools")
DATA = os.path.join(SOURCE_DIR, "..", "shared", "data")
# `import lstmlm` finds the compiled package of the build tree (LSTMLM_PYTHONPATH, set by ctest when the module is
# built; its lstmlm/convert and lstmlm/format link to the source) first, else the source tree's python/, whose
# lstmlm has the converters and the format writer but no compiled part.
PYTHONPATH = os.environ.get("LSTMLM_PYTHONPATH", "")
for _p in [p for p in (os.path.join(SOURCE_DIR, "python"), PYTHONPATH) if p]:
    if _p in sys.path:
        sys.path.remove(_p)
    sys.path.insert(0, _p)


def temp_root(prefix):
    """A folder for one test module's files, removed when the interpreter exits, after its last test."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def data(*parts):
    """Path under ../shared/data; skips the calling test (with the reason printed) when it is absent."""
    p = os.path.join(DATA, *parts)
    if not os.path.exists(p):
        print(f"SKIP: {p} not present (../shared/data holds the third-party test models)", file=sys.stderr)
        raise unittest.SkipTest(f"{p} not present")
    return p


def convert(*args):
    """Runs tools/convert.py; returns the CompletedProcess (text)."""
    return subprocess.run([sys.executable, os.path.join(TOOLS, "convert.py"), *args], capture_output=True,
                          text=True)


def convert_ok(testcase, *args):
    r = convert(*args)
    testcase.assertEqual(r.returncode, 0, r.stderr)
    return r


def read_config(outdir):
    with open(os.path.join(outdir, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def read_vocab(outdir):
    with open(os.path.join(outdir, "vocab.json"), encoding="utf-8") as f:
        return json.load(f)


def read_safetensors(path):
    import struct
    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, h in header.items():
            if name == "__metadata__":
                continue
            a, b = h["data_offsets"]
            f.seek(base + a)
            out[name] = np.frombuffer(f.read(b - a), dtype="<f4").reshape(h["shape"])
        return out


def require_cli():
    """The lstmlm binary (LSTMLM_CLI, set by ctest); skips the calling test when it is not set."""
    if not CLI or not os.path.exists(CLI):
        raise unittest.SkipTest("LSTMLM_CLI not set (run through ctest)")
    return CLI


def run_lstmlm(*args):
    """Runs the lstmlm CLI; skips the calling test when it is not available."""
    return subprocess.run([require_cli(), *args], capture_output=True, text=True)


def predict_logprobs(model_dir, contexts):
    """[np.array of ln p over the vocabulary] after each id context (a list of ints), from one call of
    `lstmlm predict --ids --top 0 --stateful` (the context as given, from the zero state: a Keras model's
    default --pad-to input_length window is turned off); fails on a non-zero exit or a record for another
    context."""
    import numpy as np
    r = run_lstmlm("predict", "-m", model_dir, "--ids", "--top", "0", "--stateful", "--output-format", "jsonl",
                   *[" ".join(str(i) for i in c) for c in contexts])
    if r.returncode != 0:
        raise AssertionError(f"lstmlm predict failed ({r.returncode}): {r.stderr}")
    records = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    if len(records) != len(contexts):
        raise AssertionError(f"{len(records)} records for {len(contexts)} contexts")
    out = []
    for rec, c in zip(records, contexts):
        if rec["ids"] != list(c):
            raise AssertionError(f"record for {rec['ids']}, expected {list(c)}")
        lp = np.full(len(rec["top"]), np.nan)
        for e in rec["top"]:
            lp[e["id"]] = e["logprob"]
        out.append(lp)
    return out


def require_module():
    """The lstmlm package with its compiled part; skips the calling test (the reason printed) when it is not
    importable: the sanitizer builds, a build without pybind11-dev."""
    try:
        import lstmlm
        lstmlm.Model  # the source tree's package without the compiled part raises ImportError here
    except ImportError as e:
        why = f"the lstmlm module is not importable ({e}; LSTMLM_PYTHONPATH={PYTHONPATH!r})"
        print("SKIP:", why, file=sys.stderr)
        raise unittest.SkipTest(why)
    return lstmlm


def load_script(name, path):
    """A script without a .py suffix (or outside the import path) imported as module `name`."""
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod
