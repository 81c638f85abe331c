"""The .deb (`cpack -G DEB` over this Release build tree, docs/packaging.md) is the whole tool: the CLI, the
converter `lstmlm-convert` and the Python module under Debian's /usr/lib/python3/dist-packages, with Depends on
Debian's python3, python3-numpy and python3-h5py and Recommends on the other frameworks' readers. Unpacked into
a scratch root (dpkg -x, as scripts/test does; nothing is installed on this machine), its lstmlm-convert
converts a real Keras model, its lstmlm scores with it, and its module imports from there. Skips without
cpack, dpkg-deb or dpkg-shlibdeps, in a build without the Python module, and without ../shared/data."""
import glob
import os
import re
import shutil
import subprocess
import sys
import unittest

import pyutil

BUILD = os.path.dirname(os.path.realpath(pyutil.CLI)) if pyutil.CLI else ""
TMP = DEB = STAGE = None


def setUpModule():
    global TMP, DEB, STAGE
    if not BUILD or not pyutil.PYTHONPATH:
        raise unittest.SkipTest("the Python module is not built in this tree (LSTMLM_PYTHONPATH / LSTMLM_CLI unset)")
    for tool, package in (("cpack", "cmake"), ("dpkg-deb", "dpkg"), ("dpkg-shlibdeps", "dpkg-dev"), ("file", "file")):
        if shutil.which(tool) is None:
            raise unittest.SkipTest(f"{tool} not found: apt-get install {package}")
    with open(os.path.join(BUILD, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
        cache = f.read()
    if not re.search(r"^CMAKE_BUILD_TYPE:\w+=Release$", cache, re.M) or re.search(r"^LSTMLM_SANITIZE:\w+=ON$", cache,
                                                                                      re.M):
        raise unittest.SkipTest(f"{BUILD} is not a Release build without sanitizers")
    TMP = pyutil.temp_root("lstmlm_deb_")
    r = subprocess.run(["cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B",
                        os.path.join(TMP, "deb")], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"cpack: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    [DEB] = glob.glob(os.path.join(TMP, "deb", "lstmlm_*.deb"))
    STAGE = os.path.join(TMP, "root")
    subprocess.run(["dpkg", "-x", DEB, STAGE], check=True, timeout=120)


def staged_env():
    """The environment of the unpacked package as if installed: its /usr/bin first, its dist-packages on the
    path (the scratch root stands for /), nothing of the build or source tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LSTMLM_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.path.join(STAGE, "usr", "bin") + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.path.join(STAGE, "usr", "lib", "python3", "dist-packages")
    return env


class Deb(unittest.TestCase):
    def test_fields(self):
        r = subprocess.run(["dpkg-deb", "-f", DEB, "Depends", "Recommends"], capture_output=True, text=True, check=True)
        fields = dict(line.split(": ", 1) for line in r.stdout.splitlines())
        depends = [d.strip() for d in fields["Depends"].split(",")]
        recommends = [d.strip() for d in fields["Recommends"].split(",")]
        v = sys.version_info
        for d in ("python3-numpy", "python3-h5py", f"python3 (>= {v[0]}.{v[1]}~)", f"python3 (<< {v[0]}.{v[1] + 1})"):
            self.assertIn(d, depends)
        for d in ("python3-torch", "python3-onnx", "python3-sentencepiece"):
            self.assertIn(d, recommends)

    def test_files(self):
        r = subprocess.run(["dpkg-deb", "-c", DEB], capture_output=True, text=True, check=True)
        files = {line.split()[5] for line in r.stdout.splitlines()}
        for f in ("./usr/bin/lstmlm", "./usr/bin/lstmlm-convert", "./usr/lib/python3/dist-packages/lstmlm/__init__.py",
                  "./usr/lib/python3/dist-packages/lstmlm/convert/cli.py",
                  "./usr/lib/python3/dist-packages/lstmlm/format/tensor_names.json"):
            self.assertIn(f, files)
        self.assertEqual(len([f for f in files if re.fullmatch(r"\./usr/lib/python3/dist-packages/lstmlm/_lstmlm\..*\.so",
                                                               f)]), 1)
        self.assertFalse([f for f in files if "__pycache__" in f or "/python3." in f], sorted(files))

    def test_convert_and_score_with_the_installed_commands(self):
        src = pyutil.data("keras3-ml-wordpred")
        out = os.path.join(TMP, "wordpred")
        env = staged_env()
        cwd = os.path.join(TMP, "cwd")  # outside the repository
        os.makedirs(cwd, exist_ok=True)
        r = subprocess.run(["lstmlm-convert", os.path.join(src, "word_prediction_model.h5"), out, "--vocab",
                            os.path.join(src, "word_index.json")], capture_output=True, text=True, env=env, cwd=cwd,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"wrote {out}: vocab 2118", r.stderr)
        r = subprocess.run(["lstmlm", "predict", "-m", out, "--top", "1", "--output-format", "jsonl",
                            "machine learning is a"], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"token": "learning"', r.stdout)
        # The installed converter is the one that ran, and the module beside it.
        code = "import lstmlm, shutil; print(lstmlm.__file__); print(shutil.which('lstmlm-convert'))"
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), [os.path.join(STAGE, "usr", "lib", "python3", "dist-packages", "lstmlm",
                                                          "__init__.py"), os.path.join(STAGE, "usr", "bin",
                                                                                        "lstmlm-convert")])
        # Given the framework file, the installed CLI names the installed converter.
        r = subprocess.run(["lstmlm", "info", "-m", os.path.join(src, "word_prediction_model.h5")], capture_output=True,
                           text=True, env=env, cwd=cwd, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("lstmlm-convert", r.stderr)


if __name__ == "__main__":
    unittest.main()
