"""`python3 -m build` run where CMake's build folder is named build (the repository root): Python finds that
folder first, as a namespace package, when PyPA's build (python3-build) is not installed for this interpreter,
and would fail with "No module named build.__main__". This file, copied into the build folder by CMake, says
what is missing instead. With PyPA's build installed, its package is found and this file is never run."""
import sys

sys.stderr.write(
    f"python3 -m build: PyPA's build is not installed for {sys.executable}, so Python found CMake's build "
    "folder instead: apt-get install python3-build (or pip install build), or run Debian's /usr/bin/python3 "
    "-m build --no-isolation (docs/packaging.md)\n")
sys.exit(1)
