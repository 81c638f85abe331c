"""A conversion under a Python that lacks a package the converters need (numpy for every source, h5py for Keras
files, onnx for .onnx files) ends with one stderr line naming the Debian package to install and exit 1, never a
traceback, whichever way the converters are started. The package is hidden from the child interpreter with
sys.modules[NAME] = None, which makes `import NAME` raise ModuleNotFoundError as a missing package does."""
import os
import subprocess
import sys
import unittest

from pyutil import SOURCE_DIR, data, temp_root

TMP = temp_root("lstmlm_missing_pkg_")

# The child: hides one package, then runs one entry point as `python3 ...` would.
CHILD = """
import runpy, sys
hidden, how, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.modules[hidden] = None
if how == "tools":
    sys.argv = ["convert.py"] + argv
    runpy.run_path(TOOLS_CONVERT, run_name="__main__")
elif how == "module":
    sys.path.insert(0, PYTHON_DIR)
    sys.argv = ["lstmlm.convert"] + argv
    runpy.run_module("lstmlm.convert", run_name="__main__", alter_sys=True)
else:
    sys.path.insert(0, PYTHON_DIR)
    from lstmlm.__main__ import convert_main
    sys.exit(convert_main(argv))
"""


def run(hidden, how, source):
    code = CHILD.replace("TOOLS_CONVERT", repr(os.path.join(SOURCE_DIR, "tools", "convert.py"))).replace(
        "PYTHON_DIR", repr(os.path.join(SOURCE_DIR, "python")))
    out = os.path.join(TMP, f"{hidden}_{how}")
    return subprocess.run([sys.executable, "-c", code, hidden, how, source, out], capture_output=True, text=True,
                          timeout=300)


class MissingPackages(unittest.TestCase):
    def check(self, hidden, deb, source):
        for how in ("tools", "module", "console"):
            with self.subTest(hidden=hidden, how=how):
                r = run(hidden, how, source)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertEqual(r.stdout, "")
                lines = r.stderr.splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertTrue(lines[0].startswith("lstmlm-convert: error: "), r.stderr)
                self.assertIn(f"apt-get install {deb}", lines[0])
                self.assertNotIn("Traceback", r.stderr)

    def test_numpy(self):
        self.check("numpy", "python3-numpy", data("keras3-ml-wordpred", "word_prediction_model.h5"))

    def test_h5py(self):
        self.check("h5py", "python3-h5py", data("keras3-ml-wordpred", "word_prediction_model.h5"))

    def test_onnx(self):
        self.check("onnx", "python3-onnx", data("onnx-keras-nextword-pkrupee", "next_word_model.onnx"))

    def test_the_line_for_each_package(self):
        sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
        from lstmlm.convert.entry import missing_package_line
        for name, deb in (("numpy", "python3-numpy"), ("h5py", "python3-h5py"), ("onnx", "python3-onnx"),
                          ("numpy.lib", "python3-numpy")):
            self.assertIn(f"apt-get install {deb}", missing_package_line(ModuleNotFoundError("x", name=name)))
        self.assertIsNone(missing_package_line(ModuleNotFoundError("x", name="somethingelse")))


if __name__ == "__main__":
    unittest.main()
