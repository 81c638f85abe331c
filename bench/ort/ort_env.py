"""onnxruntime-node for the benchmarks that run ONNX Runtime (bench/compare's ort peer, bench/ort/serve_vs_ort.py):
installed with npm from bench/ort/package.json into a folder outside the source tree, never by the tests."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def ensure_ort(folder, log=print):
    """onnxruntime-node in folder/node_modules, installed with `npm install --ignore-scripts` (its install script
    only fetches GPU extras) when absent or when bench/ort/package.json changed. Returns the NODE_PATH to run
    bench/ort's scripts with; exits with a message when node or npm is missing."""
    for tool in ("node", "npm"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode != 0:
            sys.exit(f"ONNX Runtime's side needs {tool}: apt-get install nodejs npm")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(HERE, "package.json")) as f:
        want = f.read()
    have = os.path.join(folder, "package.json")
    current = os.path.exists(have) and open(have).read() == want
    if not (current and os.path.isdir(os.path.join(folder, "node_modules", "onnxruntime-node"))):
        with open(have, "w") as f:
            f.write(want)
        log(f"npm install --ignore-scripts in {folder}")
        subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=folder, check=True,
                       stdout=subprocess.DEVNULL)
    return os.path.join(folder, "node_modules")
