"""docs/c-api.md's line for building the example program against a build tree, run as written from a copy of
the repository root (links to include/, tests/ and models/, build/ the tree under test): it compiles, links the
tree's liblstmlm.so and prints what the build's own lstmlm_capi_example prints. Skips without cc, and in a
sanitizer build (a program linked to an instrumented library needs the sanitizer runtime first)."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import pyutil

ROOT = pyutil.SOURCE_DIR
BUILD = os.path.dirname(os.path.realpath(pyutil.CLI)) if pyutil.CLI else ""


def documented_line():
    with open(os.path.join(ROOT, "docs", "c-api.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"From a build tree.*?`(cc [^`]+)`", text, re.S)
    if not m:
        raise AssertionError("docs/c-api.md has no `cc ...` line after 'From a build tree'")
    return m.group(1)


class BuildTreeLine(unittest.TestCase):
    def test_the_line_builds_the_example_as_written(self):
        if not BUILD:
            self.skipTest("LSTMLM_CLI not set (run through ctest)")
        if shutil.which("cc") is None:
            self.skipTest("no cc: apt-get install gcc")
        with open(os.path.join(BUILD, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
            if re.search(r"^LSTMLM_SANITIZE:\w+=ON$", f.read(), re.M):
                self.skipTest("a sanitizer build: its library needs the sanitizer runtime loaded first")
        reference = os.path.join(BUILD, "tests", "lstmlm_capi_example")
        if not os.access(reference, os.X_OK):
            self.skipTest("the build has no lstmlm_capi_example")
        line = documented_line()
        self.assertIn("tests/capi/example.c", line)
        with tempfile.TemporaryDirectory(prefix="lstmlm_capi_line_") as root:
            for name in ("include", "tests", "models"):
                os.symlink(os.path.join(ROOT, name), os.path.join(root, name))
            os.symlink(BUILD, os.path.join(root, "build"))
            r = subprocess.run(["bash", "-c", line], cwd=root, capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, f"{line}\n{r.stderr}")
            args = ["models/fairytales-word", "the old man"]
            got = subprocess.run([os.path.join(root, "example"), *args], cwd=root, capture_output=True, text=True,
                                 timeout=60)
            want = subprocess.run([reference, *args], cwd=root, capture_output=True, text=True, timeout=60)
        self.assertEqual(got.returncode, 0, got.stderr)
        self.assertEqual(got.stdout, want.stdout)
        self.assertIn("next:", got.stdout)


if __name__ == "__main__":
    unittest.main()
