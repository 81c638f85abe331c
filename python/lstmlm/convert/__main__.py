"""python3 -m lstmlm.convert SOURCE OUTDIR [options]: the converter command line (cli.main; docs/importing.md)."""
import sys

from .entry import run

sys.exit(run())
