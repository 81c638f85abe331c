"""Builds the Python package `lstmlm` (docs/packaging.md): setuptools drives the project's own CMake build (the
library linked statically into the module and the CLI) and packs what it made beside the pure-Python package:

    lstmlm/_lstmlm.cpython-*.so      the compiled module
    lstmlm/bin/lstmlm                the CLI binary, run by the `lstmlm` console script (lstmlm/__main__.py)
    lstmlm/{convert,format}/         the converters and the model-directory writer, with format/tensor_names.json

Metadata is in pyproject.toml; the version is the CMake project's (CMakeLists.txt), the one `lstmlm --version`
and `lstmlm.__version__` print. Environment:
    LSTMLM_CMAKE_BUILD_DIR   a configured Release build tree whose module and CLI are packed as they are (no
                             compile; the tree is only read): `LSTMLM_CMAKE_BUILD_DIR=build python3 -m build ...`
    LSTMLM_CMAKE_ARGS        extra CMake arguments of a build from scratch, e.g. -DLSTMLM_PORTABLE=ON
    CMAKE_BUILD_PARALLEL_LEVEL   compile jobs (default: os.cpu_count())
A build from scratch goes to build-wheel/cmake under the source tree (of the unpacked sdist under python3 -m
build). A missing build dependency stops it with one line naming the Debian package to install."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
TENSOR_SPEC = os.path.join("src", "format", "tensor_names.json")
EGG_BASE = "build-wheel"
os.makedirs(EGG_BASE, exist_ok=True)


class BuildError(SystemExit):
    def __init__(self, message):
        super().__init__(f"lstmlm: {message}")


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"^project\(lstmlm VERSION ([0-9]+(?:\.[0-9]+)*)", f.read(), re.M)
    if not m:
        raise BuildError("CMakeLists.txt has no `project(lstmlm VERSION X.Y.Z` line to take the version from")
    return m.group(1)


def read_cache(build_dir):
    """CMakeCache.txt of build_dir as a dict NAME -> value, or None when the tree is not configured."""
    path = os.path.join(build_dir, "CMakeCache.txt")
    if not os.path.isfile(path):
        return None
    cache = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"([A-Za-z_0-9.\-]+):[A-Z]+=(.*)$", line.rstrip("\n"))
            if m:
                cache[m.group(1)] = m.group(2)
    return cache


def check_prerequisites():
    """What a build from scratch needs before CMake runs, each missing one named by its Debian package."""
    if not shutil.which("cmake"):
        raise BuildError("cmake not found: apt-get install cmake")
    if not (os.environ.get("CXX") or any(shutil.which(c) for c in ("c++", "g++", "clang++"))):
        raise BuildError("no C++ compiler found (c++, g++, clang++ or $CXX): apt-get install g++")
    if not os.environ.get("CMAKE_GENERATOR") and not shutil.which("make"):
        raise BuildError("make not found (CMake's default generator): apt-get install make")
    if not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        raise BuildError(f"Python.h of {sys.executable} not found: apt-get install python3-dev")
    try:
        import numpy  # noqa: F401
    except ImportError:
        raise BuildError(f"{sys.executable} cannot import numpy, which the module needs: apt-get install python3-numpy")


# A failed configure names what it missed; each pattern of its output points at one Debian package.
CONFIGURE_MISSES = [
    (r"No CMAKE_CXX_COMPILER could be found|CMAKE_CXX_COMPILER.*not (set|found)", "g++", "no C++ compiler"),
    (r"No CMAKE_C_COMPILER could be found", "gcc", "no C compiler"),
    (r"CMAKE_MAKE_PROGRAM is not set|unable to find a build program", "make", "no build program"),
    (r"Could NOT find PkgConfig|pkg-config tool not found", "pkg-config", "pkg-config not found"),
    (r"Eigen3", "libeigen3-dev", "Eigen 3 not found"),
    (r"nlohmann_json", "nlohmann-json3-dev", "nlohmann_json not found"),
    (r"CLI11", "libcli11-dev", "CLI11 not found"),
    (r"cpp-httplib", "libcpp-httplib-dev", "cpp-httplib not found"),
    (r"Could NOT find Python.*Development|Python.*missing:.*(INCLUDE|Development)", "python3-dev",
     "the Python headers not found"),
]


def run(cmd, what):
    """Runs cmd with its output shown; on failure, one last line naming the Debian package when the output
    says which is missing."""
    print("lstmlm: " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    output = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") as p:
        for line in p.stdout:  # shown as it comes (a compile takes minutes), kept to be searched
            sys.stdout.write(line)
            sys.stdout.flush()
            output.append(line)
    if p.returncode != 0:
        text = "".join(output)
        for pattern, package, message in CONFIGURE_MISSES:
            if re.search(pattern, text):
                raise BuildError(f"{what} failed: {message}: apt-get install {package}")
        raise BuildError(f"{what} failed (exit status {p.returncode}); its output is above")


class CMakeBuildExt(build_ext):
    """Builds (or, with LSTMLM_CMAKE_BUILD_DIR, takes from a Release build tree) the module and the CLI."""

    def build_extension(self, ext):
        reuse = os.environ.get("LSTMLM_CMAKE_BUILD_DIR")
        if reuse:
            build_dir = self.checked_tree(os.path.abspath(reuse))
        else:
            build_dir = self.cmake_build()
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        module = os.path.join(build_dir, "python", "lstmlm", "_lstmlm" + suffix)
        cli = os.path.join(build_dir, "lstmlm")
        for path, what in ((module, "the Python module"), (cli, "the CLI")):
            if not os.path.isfile(path):
                hint = (f"was it built for this Python ({suffix})? pybind11-dev installed?" if path == module
                        else "is it built?")
                raise BuildError(f"{what} is not in the build tree ({path}): {hint}")
        package_dir = os.path.dirname(self.get_ext_fullpath(ext.name))
        self.install_binary(module, self.get_ext_fullpath(ext.name))
        self.install_binary(cli, os.path.join(package_dir, "bin", "lstmlm"))

    def checked_tree(self, build_dir):
        cache = read_cache(build_dir)
        if cache is None:
            raise BuildError(f"LSTMLM_CMAKE_BUILD_DIR={build_dir} is not a configured CMake build tree")
        if cache.get("CMAKE_BUILD_TYPE") != "Release" or cache.get("LSTMLM_SANITIZE", "OFF").upper() in ("ON", "1"):
            raise BuildError(f"LSTMLM_CMAKE_BUILD_DIR={build_dir} is not a Release build without sanitizers "
                             f"(CMAKE_BUILD_TYPE={cache.get('CMAKE_BUILD_TYPE')}, "
                             f"LSTMLM_SANITIZE={cache.get('LSTMLM_SANITIZE')})")
        version = cache.get("CMAKE_PROJECT_VERSION")
        if version and version != project_version():
            raise BuildError(f"LSTMLM_CMAKE_BUILD_DIR={build_dir} is lstmlm {version}, this source {project_version()}")
        print(f"lstmlm: packing the module and the CLI of {build_dir} as they are (LSTMLM_CMAKE_BUILD_DIR)",
              flush=True)
        return build_dir

    def cmake_build(self):
        check_prerequisites()
        build_dir = os.path.join(ROOT, "build-wheel", "cmake")
        configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DLSTMLM_WERROR=OFF",
                     "-DLSTMLM_BUILD_TESTS=OFF", "-DLSTMLM_PYTHON=ON", "-DBUILD_SHARED_LIBS=OFF",
                     f"-DPython_EXECUTABLE={sys.executable}"]
        configure += shlex.split(os.environ.get("LSTMLM_CMAKE_ARGS", ""))
        run(configure, "cmake configure")
        cache = read_cache(build_dir) or {}
        if cache.get("pybind11_DIR", "pybind11_DIR-NOTFOUND").endswith("NOTFOUND"):
            raise BuildError("pybind11 not found by CMake: apt-get install pybind11-dev")
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        run(["cmake", "--build", build_dir, "--target", "lstmlm_python", "lstmlm_cli", "-j", jobs], "cmake --build")
        return build_dir

    def install_binary(self, source, dest):
        """Copies a built file into the package; stripped of its symbol table (the build has no debug
        information) when binutils' strip is there."""
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(source, dest)
        os.chmod(dest, 0o755)
        if shutil.which("strip"):
            subprocess.run(["strip", "--strip-unneeded", dest], check=True)


class BuildPy(build_py):
    """The pure-Python package, and beside lstmlm.format its copy of the tensor-name spec (src/format), which
    it reads when installed."""

    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "lstmlm", "format", "tensor_names.json")
        self.copy_file(os.path.join(ROOT, TENSOR_SPEC), dest)


setup(
    version=project_version(),
    package_dir={"": "python"},
    packages=["lstmlm", "lstmlm.convert", "lstmlm.format"],
    package_data={"lstmlm": ["py.typed", "__init__.pyi"]},
    license_files=["LICENSE"],
    ext_modules=[Extension("lstmlm._lstmlm", sources=[])],
    cmdclass={"build_ext": CMakeBuildExt, "build_py": BuildPy},
    # setuptools' own files go to build-wheel/, not to the CMake build tree `build/` nor into python/.
    options={"build": {"build_base": os.path.join("build-wheel", "setuptools")},
             "egg_info": {"egg_base": EGG_BASE}},
)
