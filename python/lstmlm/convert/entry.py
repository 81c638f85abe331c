"""The converters' entry point for every way they are started (python3 -m lstmlm.convert, lstmlm-convert,
tools/convert.py): cli.main, with a Python package the converters need and the interpreter lacks (numpy for
every source, h5py for Keras files, onnx for .onnx files, sentencepiece for --sentencepiece, yaml for an ESPnet
config.yaml) reported as one line naming the Debian package to
install, exit 1, never a traceback. Imports nothing the converters need before it has caught that."""
import sys

# The Python packages a conversion imports, and the Debian packages that provide them.
DEBIAN_PACKAGES = {"numpy": "python3-numpy", "h5py": "python3-h5py", "onnx": "python3-onnx",
                   "sentencepiece": "python3-sentencepiece", "yaml": "python3-yaml"}


def missing_package_line(e):
    """The error line for ModuleNotFoundError e when a converter's package is missing, else None."""
    top = (getattr(e, "name", None) or "").split(".")[0]
    deb = DEBIAN_PACKAGES.get(top)
    if deb is None:
        return None
    return (f"lstmlm-convert: error: the Python package {top} is not installed for {sys.executable}: "
            f"apt-get install {deb} (or pip install {top})")


def run(argv=None):
    """cli.main(argv)'s exit status; 1 with one line when a needed package is missing, 130 on Ctrl-C."""
    try:
        from .cli import main
        return main(argv)
    except KeyboardInterrupt:  # during argument parsing or the imports too: quiet, the shell's status for SIGINT
        return 130
    except ModuleNotFoundError as e:
        line = missing_package_line(e)
        if line is None:
            raise
        print(line, file=sys.stderr)
        return 1
