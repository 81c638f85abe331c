"""bench/onednn_bench.cpp (bench/compare's oneDNN peer) compiles without warnings and prints one jsonl row
per cell with the keys bench/compare reads. Skipped when libdnnl-dev (oneapi/dnnl/dnnl.hpp) is absent.
Cheap: -O0, a tiny shape (E != H with 3 layers: the two-primitive path), one call per cell."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.environ.get("LSTMLM_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
KEYS = ("peer", "shape", "workload", "batch", "length", "threads", "repetitions", "calls", "tokens_per_call",
        "tokens_per_s", "tokens_per_s_sd", "tokens_per_s_median", "tokens_per_s_min", "tokens_per_s_max",
        "calls_per_s", "latency_p50_us", "latency_p99_us", "gflops", "isa", "build", "impl", "note")


class OnednnBench(unittest.TestCase):
    def test_tiny_cells(self):
        cxx = shutil.which("g++")
        if cxx is None:
            raise unittest.SkipTest("g++ not present")
        with tempfile.TemporaryDirectory() as tmp:
            exe = os.path.join(tmp, "onednn_bench")
            src = os.path.join(SOURCE_DIR, "bench", "onednn_bench.cpp")
            r = subprocess.run([cxx, "-O0", "-std=c++17", "-Wall", "-Wextra", "-Werror", src, "-o", exe, "-ldnnl",
                                "-fopenmp"], capture_output=True, text=True)
            if r.returncode != 0 and "dnnl.hpp" in r.stderr and "No such file" in r.stderr:
                raise unittest.SkipTest("libdnnl-dev not installed")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "", "compiler warnings")
            out = subprocess.run([exe, "--shape", "50,6,8,3", "-w", "score,predict,generate", "-b", "1,2", "-s", "3",
                                  "-t", "1", "-r", "2", "--warmup", "0", "--min-time", "0"],
                                 capture_output=True, text=True, check=True).stdout
        rows = [json.loads(line) for line in out.splitlines()]
        self.assertEqual([(r["workload"], r["batch"]) for r in rows],
                         [(w, b) for w in ("score", "predict", "generate") for b in (1, 2)])
        for row in rows:
            for k in KEYS:
                self.assertIn(k, row)
            self.assertEqual(row["peer"], "onednn")
            self.assertEqual(row["shape"], "V=50 E=6 H=8x3")
            self.assertEqual(row["tokens_per_call"], row["batch"] * 3)
            self.assertEqual(row["calls"], 2)
            self.assertLessEqual(row["tokens_per_s_min"], row["tokens_per_s_median"])
            self.assertLessEqual(row["tokens_per_s_median"], row["tokens_per_s_max"])
            self.assertGreater(row["tokens_per_s_min"], 0)
            self.assertTrue(row["build"].startswith("oneDNN "))
            self.assertEqual(row["impl"].count("lstm"), 1)


if __name__ == "__main__":
    unittest.main()
