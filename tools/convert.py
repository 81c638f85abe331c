#!/usr/bin/env python3
"""Converts a framework's language model into an lstmlm model directory: `python3 -m lstmlm.convert` run from
a source checkout, no build or install needed (the code is python/lstmlm/convert/; see docs/importing.md).
usage: python3 tools/convert.py SOURCE OUTDIR [--vocab FILE] [options]"""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python")))
    from lstmlm.convert.entry import run
    sys.exit(run())
