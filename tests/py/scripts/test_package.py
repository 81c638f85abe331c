"""The one Python package `lstmlm` from the source tree (python/), where the compiled part is not built:
`import lstmlm` works, a name of the compiled part raises one ImportError line saying how to build it, and the
converters run as `python3 -m lstmlm.convert` exactly as `python3 tools/convert.py`."""
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


class ConvertEntryPoints(unittest.TestCase):
    def test_module_and_shim_print_the_same(self):
        shim = os.path.join(pyutil.TOOLS, "convert.py")
        for args, status in ((["--help"], 0), ([], 2), (["--no-such-option"], 2), (["/nonexistent/m.h5", "out"], 1)):
            with self.subTest(args=args):
                by_module = run_python(["-m", "lstmlm.convert"], *args)
                by_shim = run_python([shim], *args)
                self.assertEqual((by_module.returncode, by_module.stdout, by_module.stderr),
                                 (by_shim.returncode, by_shim.stdout, by_shim.stderr))
                self.assertEqual(by_module.returncode, status, by_module.stderr)
                if status:
                    self.assertTrue(by_module.stderr.splitlines()[-1].startswith("lstmlm-convert: error: "),
                                    by_module.stderr)

    def test_format_reads_the_spec_of_the_source_tree(self):
        r = run_python(["-c", "import lstmlm.format as f; print(f.SPEC_PATH); print(f.GATE_ORDER)"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), [os.path.join(os.path.realpath(pyutil.SOURCE_DIR), "src", "format",
                                                              "tensor_names.json"), "('i', 'f', 'g', 'o')"])

    def test_the_build_tree_package_carries_the_subpackages(self):
        if not pyutil.PYTHONPATH:
            raise unittest.SkipTest("LSTMLM_PYTHONPATH not set (the build's python dir)")
        code = """import os, lstmlm, lstmlm.convert.cli, lstmlm.format
assert lstmlm.Model, "the compiled part"
assert os.path.isfile(lstmlm.format.SPEC_PATH), lstmlm.format.SPEC_PATH
print(lstmlm.convert.cli.__file__)
"""
        env = dict(os.environ, PYTHONPATH=pyutil.PYTHONPATH)
        with tempfile.TemporaryDirectory(prefix="lstmlm_pkg_") as cwd:
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd,
                               timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith(pyutil.PYTHONPATH), r.stdout)

class WithoutNumpy(unittest.TestCase):
    def test_every_entry_point_says_one_line_or_runs(self):
        # numpy made unimportable (sitecustomize): the compiled module needs it, the lstmlm binary does not.
        if not pyutil.PYTHONPATH:
            raise unittest.SkipTest("LSTMLM_PYTHONPATH not set (the build's python dir)")
        with tempfile.TemporaryDirectory(prefix="lstmlm_nonumpy_") as d:
            with open(os.path.join(d, "sitecustomize.py"), "w") as f:
                f.write("import sys\nsys.modules['numpy'] = None\n")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([d, pyutil.PYTHONPATH]))
            run = lambda *a: subprocess.run([sys.executable, *a], capture_output=True, text=True, env=env,  # noqa: E731
                                            cwd=d, timeout=120)
            r = run("-m", "lstmlm", "--version")  # the CLI binary: no numpy needed
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.startswith("lstmlm "), r.stdout)
            r = run("-m", "lstmlm.convert", os.path.join(d, "nothing.h5"), os.path.join(d, "out"))
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(r.stderr.splitlines(), [r.stderr.strip()], r.stderr)
            self.assertIn("the Python package numpy is not installed", r.stderr)
            r = run("-c", "import lstmlm\ntry:\n    lstmlm.Model\nexcept ImportError as e:\n    print(e)")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("lstmlm.Model: the Python package numpy is not installed", r.stdout)


if __name__ == "__main__":
    unittest.main()
