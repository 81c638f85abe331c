"""The `lstmlm` command of an installed package: runs the lstmlm CLI binary with the same arguments (exec: its
exit status, signals and standard streams are the binary's own), and `lstmlm-convert`, the converters.

    lstmlm score -m MODEL FILE        (the console script a wheel installs)
    python3 -m lstmlm score -m MODEL FILE

The binary is found beside the package: lstmlm/bin/lstmlm in a wheel (docs/packaging.md), the build tree's
lstmlm when the package is imported from it (PYTHONPATH=build/python), PREFIX/bin/lstmlm after cmake --install."""
import os
import sys


def _is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def cli_path():
    """The CLI binary this package runs, or None when there is none beside it. Only an ELF file counts: in a
    venv, PREFIX/bin/lstmlm is this very console script."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = (
        os.path.join(here, "bin", "lstmlm"),  # a wheel
        os.path.join(here, os.pardir, os.pardir, "lstmlm"),  # BUILD/python/lstmlm -> BUILD/lstmlm
        os.path.join(here, os.pardir, os.pardir, os.pardir, os.pardir, "bin", "lstmlm"),  # PREFIX/lib/pythonX.Y/...
    )
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK) and _is_elf(c):
            return os.path.normpath(c)
    return None


def main(argv=None):
    """Replaces this process with the CLI binary; returns only when it cannot be run."""
    args = sys.argv[1:] if argv is None else list(argv)
    exe = cli_path()
    if exe is None:
        print(f"lstmlm: the lstmlm binary is not installed beside the package ({os.path.dirname(__file__)}/bin/lstmlm): "
              "reinstall the wheel, or run build/lstmlm from a build tree", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(exe, ["lstmlm", *args])
    except OSError as e:
        print(f"lstmlm: cannot run {exe}: {e.strerror}", file=sys.stderr)
        return 1


def convert_main(argv=None):
    """`lstmlm-convert SOURCE OUTDIR [options]`: python3 -m lstmlm.convert (docs/importing.md)."""
    from .convert.entry import run
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
