"""`import lstmlm` and `python3 -m build` under a python3 that is not the one the module was built with (a pyenv
interpreter first on PATH): one line saying what is missing, for which interpreter, and how to get it, in place
of `initialization failed` or `No module named build.__main__`."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import pyutil

CODE = "import lstmlm\ntry:\n    lstmlm.Model('models/fairytales-word')\nexcept ImportError as e:\n    print(e)\n"


def built_module():
    if not pyutil.PYTHONPATH:
        raise unittest.SkipTest("the Python module is not built in this tree (LSTMLM_PYTHONPATH unset)")
    found = glob.glob(os.path.join(pyutil.PYTHONPATH, "lstmlm", "_lstmlm*.so"))
    if not found:
        raise unittest.SkipTest(f"no compiled module in {pyutil.PYTHONPATH}/lstmlm")
    return found[0]


class OtherInterpreter(unittest.TestCase):
    def run_py(self, args, pythonpath, cwd=None):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120,
                              cwd=cwd or pyutil.SOURCE_DIR)

    def test_module_built_for_another_python(self):
        so = built_module()
        with tempfile.TemporaryDirectory() as tmp:
            pkg = os.path.join(tmp, "lstmlm")
            shutil.copytree(os.path.join(pyutil.SOURCE_DIR, "python", "lstmlm"), pkg)
            # The same module under the file name CPython 3.99 would load: this interpreter does not.
            shutil.copy(so, os.path.join(pkg, "_lstmlm.cpython-399-x86_64-linux-gnu.so"))
            r = self.run_py(["-c", CODE], tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        line = r.stdout.strip()
        self.assertIn("_lstmlm.cpython-399-x86_64-linux-gnu.so was built for CPython 3.99", line)
        self.assertIn(f"{sys.executable} is CPython {sys.version_info[0]}.{sys.version_info[1]}", line)
        self.assertIn("cmake -DPython_EXECUTABLE=", line)
        self.assertNotIn("not built", line)

    def test_numpy_missing(self):
        built_module()
        # -S: no site-packages, so no numpy, as a fresh pyenv interpreter.
        r = self.run_py(["-S", "-c", CODE], pyutil.PYTHONPATH)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), f"lstmlm.Model: the Python package numpy is not installed for "
                         f"{sys.executable}: apt-get install python3-numpy (or pip install numpy)")

    def test_a_numpy_the_module_cannot_use(self):
        built_module()
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "numpy"))
            with open(os.path.join(tmp, "numpy", "__init__.py"), "w") as f:
                f.write("raise ImportError('numpy.core.multiarray failed to import')\n")
            r = self.run_py(["-S", "-c", CODE], os.pathsep.join([pyutil.PYTHONPATH, tmp]))
        self.assertEqual(r.returncode, 0, r.stderr)
        line = r.stdout.strip()
        self.assertIn(f"the compiled module cannot use the numpy of {sys.executable} (", line)
        self.assertIn("numpy.core.multiarray failed to import", line)
        self.assertNotIn("not installed", line)

    def test_python_m_build_where_the_cmake_build_folder_is_named_build(self):
        if not pyutil.CLI:
            raise unittest.SkipTest("LSTMLM_CLI not set (run through ctest)")
        build_dir = os.path.dirname(os.path.abspath(pyutil.CLI))
        with tempfile.TemporaryDirectory() as tmp:
            os.symlink(build_dir, os.path.join(tmp, "build"))  # as in the repository root
            # -S: an interpreter without PyPA's build, which then finds the folder `build`.
            r = self.run_py(["-S", "-m", "build", "--no-isolation"], "", cwd=tmp)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertNotIn("__main__", r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn(f"PyPA's build is not installed for {sys.executable}", r.stderr)
        self.assertIn("apt-get install python3-build", r.stderr)


if __name__ == "__main__":
    unittest.main()
