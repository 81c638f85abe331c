"""The Python package as users install it (docs/packaging.md): `python3 -m build --no-isolation` makes an sdist
and, from it, a wheel, packing the module and the CLI of this Release build tree (LSTMLM_CMAKE_BUILD_DIR: no
compile); each is pip-installed offline into a fresh venv (--system-site-packages, for Debian's numpy) and used
from there, from a folder outside the repository with no PYTHONPATH: `import lstmlm`, the console scripts
`lstmlm` and `lstmlm-convert`, the CLI's own bytes for a score, one version and the MIT licence in the metadata,
no build-tree path in what the extension or the CLI load, and the module's tests run against the installed
package. Skips, saying which Debian package to install, without python3-build, python3-venv, python3-pip,
python3-setuptools or python3-wheel (scripts/install-deps installs them)."""
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import zipfile

import pyutil

ROOT = os.path.realpath(pyutil.SOURCE_DIR)
PYTHONPATH = os.environ.get("LSTMLM_PYTHONPATH", "")
BUILD = os.path.realpath(os.path.dirname(pyutil.CLI)) if pyutil.CLI else ""
MODEL = os.path.join(ROOT, "models", "fairytales-word")
SENTENCES = "the old man went to the mountains .\nthe princess was very beautiful .\nonce upon a zyzzyva .\n"
# What the sdist is made from: the files MANIFEST.in grafts.
SDIST_INPUTS = ["CMakeLists.txt", "LICENSE", "README.md", "pyproject.toml", "setup.py", "MANIFEST.in", "cmake", "src",
                "include", "cli", "python"]
# Module imported by the build -> the Debian package that brings it.
BUILD_TOOLS = [("build", "python3-build"), ("setuptools", "python3-setuptools"), ("wheel", "python3-wheel"),
               ("pip", "python3-pip"), ("ensurepip", "python3-venv")]

TMP = None
WHEEL = SDIST = None
VENVS = {}  # "wheel" / "sdist" -> venv folder
BUILD_SECONDS = 0.0


def skip(reason):
    print("SKIP:", reason, file=sys.stderr)
    raise unittest.SkipTest(reason)


def cmake_cache(build_dir):
    cache = {}
    with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"([A-Za-z_0-9.\-]+):[A-Z]+=(.*)$", line.rstrip("\n"))
            if m:
                cache[m.group(1)] = m.group(2)
    return cache


def cmake_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"^project\(lstmlm VERSION ([0-9.]+)", f.read(), re.M).group(1)


def clean_env(**extra):
    """The environment of a user's shell: none of the test harness's paths to the build or source tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LSTMLM_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(extra)
    return env


def run(cmd, *, env=None, cwd=None, input=None, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, env=env or clean_env(), cwd=cwd or TMP, input=input,
                          timeout=timeout)


def check(r, what):
    if r.returncode != 0:
        raise AssertionError(f"{what}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def make_venv(name, install_args, env):
    venv = os.path.join(TMP, f"venv-{name}")
    check(run([sys.executable, "-m", "venv", "--system-site-packages", venv]), f"python3 -m venv ({name})")
    check(run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-index", *install_args], env=env),
          f"pip install ({name})")
    VENVS[name] = venv


def setUpModule():
    global TMP, WHEEL, SDIST, BUILD_SECONDS
    if not PYTHONPATH or not BUILD:
        skip("the Python module is not built in this tree (a sanitizer or fuzz build, or no pybind11-dev): "
             "LSTMLM_PYTHONPATH / LSTMLM_CLI unset")
    cache = cmake_cache(BUILD)
    if cache.get("CMAKE_BUILD_TYPE") != "Release" or cache.get("LSTMLM_SANITIZE", "OFF").upper() in ("ON", "1"):
        skip(f"{BUILD} is not a Release build without sanitizers: the wheel packs only those")
    for module, package in BUILD_TOOLS:
        if importlib.util.find_spec(module) is None:
            skip(f"{package} is not installed ({sys.executable} cannot import {module}): apt-get install {package} "
                 "(scripts/install-deps installs it)")
    TMP = pyutil.temp_root("lstmlm_wheel_")
    # The sdist's inputs, copied: the build writes its egg-info and build folders beside setup.py, and the
    # source tree stays untouched.
    src = os.path.join(TMP, "src")
    os.makedirs(src)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "bin")
    for name in SDIST_INPUTS:
        p = os.path.join(ROOT, name)
        if os.path.isdir(p):
            shutil.copytree(p, os.path.join(src, name), ignore=ignore)
        else:
            shutil.copy2(p, os.path.join(src, name))
    reuse = clean_env(LSTMLM_CMAKE_BUILD_DIR=BUILD)
    start = time.monotonic()
    check(run([sys.executable, "-m", "build", "--no-isolation", "--outdir", os.path.join(TMP, "dist"), src], env=reuse),
          "python3 -m build --no-isolation")
    BUILD_SECONDS = time.monotonic() - start
    [WHEEL] = glob.glob(os.path.join(TMP, "dist", "lstmlm-*.whl"))
    [SDIST] = glob.glob(os.path.join(TMP, "dist", "lstmlm-*.tar.gz"))
    print(f"built {os.path.basename(SDIST)} and {os.path.basename(WHEEL)} ({os.path.getsize(WHEEL)} bytes) in "
          f"{BUILD_SECONDS:.1f} s from {BUILD}", file=sys.stderr)
    make_venv("wheel", [WHEEL], clean_env())
    # The sdist builds its wheel on install: from the same build tree, so it compiles nothing here either.
    make_venv("sdist", ["--no-build-isolation", SDIST], reuse)


def venv_bin(venv, name):
    return os.path.join(VENVS[venv], "bin", name)


def site_packages(venv):
    [d] = glob.glob(os.path.join(VENVS[venv], "lib", "python3*", "site-packages"))
    return d


def installed(venv, *parts):
    return os.path.join(site_packages(venv), "lstmlm", *parts)


def model_copy():
    d = os.path.join(tempfile.mkdtemp(dir=TMP), "fairytales-word")
    shutil.copytree(MODEL, d)
    return d


class Wheel(unittest.TestCase):
    def test_contents(self):
        with zipfile.ZipFile(WHEEL) as z:
            names = set(z.namelist())
            mode = {i.filename: i.external_attr >> 16 for i in z.infolist()}
        version = cmake_version()
        for name in ("lstmlm/__init__.py", "lstmlm/__init__.pyi", "lstmlm/py.typed", "lstmlm/__main__.py",
                     "lstmlm/dask.py", "lstmlm/bin/lstmlm", "lstmlm/convert/__init__.py", "lstmlm/convert/cli.py",
                     "lstmlm/format/__init__.py", "lstmlm/format/tensor_names.json",
                     f"lstmlm-{version}.dist-info/LICENSE", f"lstmlm-{version}.dist-info/entry_points.txt"):
            self.assertIn(name, names)
        modules = [n for n in names if re.fullmatch(r"lstmlm/_lstmlm\..*\.so", n)]
        self.assertEqual(len(modules), 1, sorted(names))
        self.assertTrue(mode["lstmlm/bin/lstmlm"] & 0o111, oct(mode["lstmlm/bin/lstmlm"]))
        # A platform wheel: it carries compiled code.
        self.assertRegex(os.path.basename(WHEEL), rf"^lstmlm-{re.escape(version)}-cp3\d+-cp3\d+-linux_x86_64\.whl$")
        print(f"wheel files: {len(names)}, {os.path.getsize(WHEEL)} bytes", file=sys.stderr)

    def test_sdist_holds_every_tracked_source(self):
        import tarfile
        with tarfile.open(SDIST) as t:
            top = t.getnames()[0].split("/")[0]
            names = {n[len(top) + 1:] for n in t.getnames()}
        r = subprocess.run(["git", "-C", ROOT, "ls-files", "--", *SDIST_INPUTS], capture_output=True, text=True)
        if r.returncode != 0:
            self.skipTest(f"{ROOT} is not a git checkout: the tracked files are unknown")
        tracked = [f for f in r.stdout.splitlines() if os.path.exists(os.path.join(ROOT, f))]
        self.assertGreater(len(tracked), 50)
        self.assertEqual([f for f in tracked if f not in names], [])
        self.assertFalse([n for n in names if n.endswith((".so", ".pyc")) or n.startswith("build/")], sorted(names))

    def test_metadata_one_version_and_the_licence(self):
        version = cmake_version()
        for venv in VENVS:
            code = ("import importlib.metadata as m, json, lstmlm; d = m.distribution('lstmlm'); "
                    "print(json.dumps([d.metadata['License'], d.version, lstmlm.__version__, "
                    "sorted(e.name for e in d.entry_points if e.group == 'console_scripts'), "
                    "d.metadata.get_all('Classifier')]))")
            r = check(run([venv_bin(venv, "python"), "-c", code]), "metadata")
            licence, dist_version, module_version, scripts, classifiers = json.loads(r.stdout)
            self.assertEqual(licence, "MIT")
            self.assertIn("License :: OSI Approved :: MIT License", classifiers)
            self.assertEqual((dist_version, module_version), (version, version))
            self.assertEqual(scripts, ["lstmlm", "lstmlm-convert"])
            r = check(run([venv_bin(venv, "lstmlm"), "--version"]), "lstmlm --version")
            self.assertTrue(r.stdout.startswith(f"lstmlm {version} "), r.stdout)
        with open(os.path.join(site_packages("wheel"), f"lstmlm-{version}.dist-info", "LICENSE"), encoding="utf-8") as f:
            self.assertIn("MIT License", f.read())


class Installed(unittest.TestCase):
    def test_import_from_the_venv(self):
        for venv in VENVS:
            code = ("import lstmlm, lstmlm.format as f, lstmlm.convert, sys\n"
                    "m = lstmlm.Model(sys.argv[1], threads=1)\n"
                    "print(lstmlm.__file__); print(f.SPEC_PATH); print(m.kernels)")
            r = check(run([venv_bin(venv, "python"), "-c", code, model_copy()]), f"import lstmlm ({venv})")
            module_file, spec, kernels = r.stdout.splitlines()
            self.assertEqual(module_file, installed(venv, "__init__.py"))
            self.assertEqual(spec, installed(venv, "format", "tensor_names.json"))
            self.assertRegex(kernels, r"^fp32/")

    def test_console_scripts(self):
        for venv in VENVS:
            r = check(run([venv_bin(venv, "lstmlm-convert"), "--help"]), "lstmlm-convert --help")
            self.assertIn("usage:", r.stdout)
            # A usage error's status and message come through unchanged (the script execs the binary).
            mine, built = run([venv_bin(venv, "lstmlm"), "no-such-command"]), run([pyutil.CLI, "no-such-command"])
            self.assertEqual((mine.returncode, mine.stdout, mine.stderr), (built.returncode, built.stdout, built.stderr))
            self.assertEqual(mine.returncode, 2)
            self.assertEqual(run([venv_bin(venv, "lstmlm-convert")]).returncode, 2)
            # python3 -m lstmlm is the same command.
            r = check(run([venv_bin(venv, "python"), "-m", "lstmlm", "--version"]), "python3 -m lstmlm --version")
            self.assertTrue(r.stdout.startswith("lstmlm "), r.stdout)

    def test_score_is_the_build_trees(self):
        model = model_copy()
        args = ["score", "-m", model, "-v", "word", "--threads", "1"]
        expected = check(run([pyutil.CLI, *args], input=SENTENCES), "build/lstmlm score").stdout
        for venv in VENVS:
            r = check(run([venv_bin(venv, "lstmlm"), *args], input=SENTENCES), f"lstmlm score ({venv})")
            self.assertEqual(r.stdout, expected)
        # The module's number is the CLI's.
        jsonl = check(run([pyutil.CLI, "score", "-m", model, "--output-format", "jsonl"], input=SENTENCES), "jsonl")
        cli = [json.loads(line)["log10prob"] for line in jsonl.stdout.splitlines() if '"type": "line"' in line]
        code = ("import json, lstmlm, sys\nm = lstmlm.Model(sys.argv[1], threads=1)\n"
                "print(json.dumps([float('%.9g' % m.score(s)) for s in sys.stdin.read().splitlines()]))")
        r = check(run([venv_bin("wheel", "python"), "-c", code, model], input=SENTENCES), "m.score")
        self.assertEqual(json.loads(r.stdout), cli)

    def test_no_build_tree_path_in_what_loads(self):
        for venv in VENVS:
            [module] = glob.glob(installed(venv, "_lstmlm*.so"))
            for binary in (module, installed(venv, "bin", "lstmlm")):
                r = check(run(["ldd", binary]), f"ldd {binary}")
                self.assertNotIn("not found", r.stdout)
                for tree in (ROOT, BUILD, TMP):
                    self.assertNotIn(tree, r.stdout, f"ldd {binary}")
                r = check(run(["readelf", "-d", binary]), f"readelf -d {binary}")
                self.assertNotRegex(r.stdout, r"\((RPATH|RUNPATH)\)", binary)

    def test_the_module_tests_against_the_installed_package(self):
        # test_python_module and test_dask, each in its own process (as ctest runs them), by the venv's
        # interpreter with the installed package first on sys.path (pyutil puts LSTMLM_PYTHONPATH there) and the
        # installed console script as the CLI.
        site = site_packages("wheel")
        env = clean_env(LSTMLM_PYTHONPATH=site, LSTMLM_CLI=venv_bin("wheel", "lstmlm"), LSTMLM_SOURCE_DIR=ROOT)
        for module in ("module.test_python_module", "module.test_dask"):
            code = ("import sys, unittest, pyutil, lstmlm\n"
                    "assert lstmlm.__file__.startswith(sys.argv[1]), lstmlm.__file__\n"
                    f"unittest.main(module=None, argv=['wheel', {module!r}])")
            r = run([venv_bin("wheel", "python"), "-c", code, site], env=env,
                    cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            self.assertEqual(r.returncode, 0, r.stderr[-5000:])
            summary = r.stderr.strip().splitlines()[-3:]
            print(f"{module} from the wheel's venv:", " ".join(summary), file=sys.stderr)
            self.assertRegex(r.stderr, r"\nOK")
            if module == "module.test_python_module":  # it ran (a test may skip without ../shared/data, not the module)
                ran = int(re.search(r"Ran (\d+) test", r.stderr).group(1))
                skipped = int((re.search(r"skipped=(\d+)", summary[-1]) or [0, 0])[1])
                self.assertGreaterEqual(ran - skipped, 10, summary)


def readme_install_lines():
    """The commands of the README's install block (its first ```sh block under "## Install") that install the
    wheel: the `python3 -m venv` line and what runs from the venv."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Install\n(.*?)^```sh\n(.*?)^```", text, re.M | re.S)
    if not m:
        raise AssertionError("README.md has no ```sh block under '## Install'")
    return [ln for ln in m.group(2).splitlines() if ln.startswith(("python3 -m venv", "V/"))]


class Readme(unittest.TestCase):
    def test_the_readme_install_works_as_written_offline(self):
        # As a user types it: `python3` is Debian's, the wheel in dist/, no package index reachable.
        lines = readme_install_lines()
        self.assertTrue(any(ln.startswith("python3 -m venv") for ln in lines), lines)
        self.assertTrue(any("pip install" in ln and "dist/lstmlm-*.whl" in ln for ln in lines), lines)
        here = tempfile.mkdtemp(dir=TMP)
        os.makedirs(os.path.join(here, "dist"))
        shutil.copy2(WHEEL, os.path.join(here, "dist"))
        bindir = os.path.join(here, "pybin")
        os.makedirs(bindir)
        os.symlink(sys.executable, os.path.join(bindir, "python3"))
        env = clean_env(PATH=bindir + os.pathsep + os.environ.get("PATH", ""), PIP_NO_INDEX="1")
        for line in lines:
            check(run(["bash", "-c", line], env=env, cwd=here), "README: " + line)
        r = check(run([os.path.join(here, "V", "bin", "lstmlm"), "--version"], env=env, cwd=here), "V/bin/lstmlm")
        self.assertTrue(r.stdout.startswith("lstmlm " + cmake_version()), r.stdout)
        check(run([os.path.join(here, "V", "bin", "python"), "-c", "import lstmlm, lstmlm.convert"], env=env, cwd=here),
              "import lstmlm from the README's venv")


class BadBuildInput(unittest.TestCase):
    """A build from scratch without what it needs stops before compiling, its last line naming the Debian
    package to install (setup.py build_ext in the copied sources, no LSTMLM_CMAKE_BUILD_DIR)."""

    def build_ext(self, path=None, pythonpath=None, cmake_args=None):
        env = clean_env()
        if path is not None:
            env["PATH"] = path
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        if cmake_args:
            env["LSTMLM_CMAKE_ARGS"] = cmake_args
        r = run([sys.executable, "setup.py", "build_ext"], env=env, cwd=os.path.join(TMP, "src"))
        self.assertEqual(r.returncode, 1, r.stdout[-2000:] + r.stderr[-2000:])
        return r.stderr.strip().splitlines()[-1]

    def tools_dir(self, *names):
        d = tempfile.mkdtemp(dir=TMP)
        for name in names:
            os.symlink(shutil.which(name), os.path.join(d, name))
        return d

    def test_no_cmake(self):
        self.assertEqual(self.build_ext(path=self.tools_dir()), "lstmlm: cmake not found: apt-get install cmake")

    def test_no_compiler(self):
        line = self.build_ext(path=self.tools_dir("cmake", "make"))
        self.assertEqual(line, "lstmlm: no C++ compiler found (c++, g++, clang++ or $CXX): apt-get install g++")

    def test_no_numpy(self):
        fake = tempfile.mkdtemp(dir=TMP)
        os.makedirs(os.path.join(fake, "numpy"))
        with open(os.path.join(fake, "numpy", "__init__.py"), "w") as f:
            f.write("raise ImportError('No module named numpy')\n")
        line = self.build_ext(pythonpath=fake)
        self.assertEqual(line, f"lstmlm: {sys.executable} cannot import numpy, which the module needs: "
                         "apt-get install python3-numpy")

    def test_no_pybind11(self):
        line = self.build_ext(cmake_args="-DCMAKE_DISABLE_FIND_PACKAGE_pybind11=TRUE")
        self.assertEqual(line, "lstmlm: pybind11 not found by CMake: apt-get install pybind11-dev")


if __name__ == "__main__":
    unittest.main()
