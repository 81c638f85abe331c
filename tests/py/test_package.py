"""The one Python package `lstmlm` from the source tree (python/), where the compiled part is not built:
`import lstmlm` works, and a name of the compiled part raises one ImportError line saying how to build it."""
import os
import subprocess
import sys
import tempfile
import unittest

import pyutil

PYTHON_SRC = os.path.join(pyutil.SOURCE_DIR, "python")


def run_python(code, *args):
    """Runs `code` in a fresh interpreter that sees only the source tree's python/ (no build tree, no
    installed lstmlm shadowing it), from a folder outside the repository."""
    env = dict(os.environ, PYTHONPATH=PYTHON_SRC)
    with tempfile.TemporaryDirectory(prefix="lstmlm_pkg_") as cwd:
        return subprocess.run([sys.executable, *code, *args], capture_output=True, text=True, env=env, cwd=cwd,
                              timeout=120)


class WithoutTheCompiledModule(unittest.TestCase):
    def test_import_works_and_compiled_names_say_how_to_build(self):
        code = """import lstmlm
assert lstmlm.__file__.startswith(%r), lstmlm.__file__
assert lstmlm.FullScore(-1.0, 2, False, "a").token == "a"
for name in ("Model", "State", "LineScore", "ModelError", "kernels_for", "__version__"):
    try:
        getattr(lstmlm, name)
    except ImportError as e:
        print(name, e)
    else:
        raise SystemExit(name + " did not raise")
try:
    lstmlm.no_such_name
except AttributeError:
    print("AttributeError")
""" % PYTHON_SRC
        r = run_python(["-c", code])
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 7, r.stdout)
        for line in lines[:6]:
            self.assertIn("lstmlm._lstmlm is not built", line)
            self.assertIn("cmake --build build", line)
            self.assertIn("PYTHONPATH=build/python", line)
        self.assertEqual(lines[6], "AttributeError")

    def test_from_import_of_a_compiled_name_is_an_import_error(self):
        r = run_python(["-c", "from lstmlm import Model"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("ImportError: lstmlm.Model: the compiled module lstmlm._lstmlm is not built", r.stderr)


if __name__ == "__main__":
    unittest.main()
