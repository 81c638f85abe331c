"""The converter command line: main(argv) parses SOURCE OUTDIR [options], detects the source type, converts
and writes the model directory; its status is the exit status. Run by `python3 -m lstmlm.convert` and by the
source checkout's `python3 tools/convert.py`. Every error is one stderr line starting `convert.py: error: `
whichever runs it (docs/errors.md): the parser's program name is fixed to convert.py.
"""
import argparse
import importlib
import os
import pickle
import struct
import sys
import zipfile

from ..format import write_model

from . import common
from .vocab import VocabError

# The --help text (unchanged since tools/convert.py held this code).
DESCRIPTION = """Converts a Keras (.h5 / .keras, Keras 1-3; TF2 SavedModel directory), TF.js layers (model.json), PyTorch (.pt),
ONNX (.onnx), TF1 (checkpoint prefix) or ml5 char-rnn (manifest.json directory) language model into an lstmlm model directory.
usage: python3 tools/convert.py SOURCE OUTDIR [--vocab FILE] [options]   (see docs/importing.md)"""
PROG = "convert.py"  # the `convert.py: error: ` prefix of every error line, whatever the entry point


def converters():
    """(name, module) in detection order; a module missing from the package is left out."""
    out = []
    for name, module in (("tfjs", "tfjs"), ("ml5", "ml5"), ("tf2", "tf2_savedmodel"), ("tf1", "tf1"), ("keras", "keras"),
                         ("torch_pt", "torch_pt"), ("onnx", "onnx_model")):
        try:
            out.append((name, importlib.import_module(f".{module}", __package__)))
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.{module}":
                raise
    return out


def _one_line(msg, limit=500):
    """Error text fit for one stderr line: a message from h5py or numpy may span lines, or quote a whole
    hostile value."""
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= limit else msg[:limit] + "..."


def _named(e, args):
    """The error's message, prefixed with the source path unless it already names a file given."""
    msg = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    if not msg.strip():
        msg = {"MemoryError": "out of memory"}.get(type(e).__name__, "failed")
    msg = _one_line(msg)
    given = [p for p in (args.source, getattr(args, "vocab", None)) if p]
    if not any(p in msg or os.path.basename(p) in msg for p in given):
        msg = f"{args.source}: {msg}"
    return msg


def _error(e, args, with_type):
    suffix = f" ({type(e).__name__})" if with_type else ""
    print(f"{PROG}: error: {_named(e, args)}{suffix}", file=sys.stderr)
    return 1


def main(argv=None):
    mods = converters()
    p = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="model file (.h5, .keras, .pt, .onnx, model.json), TF checkpoint prefix or ml5 "
                   "directory")
    p.add_argument("outdir", help="model directory to write")
    p.add_argument("--from", dest="source_type", choices=[n for n, _ in mods],
                   help="source type (default: detected from the file)")
    common.add_common_arguments(p)
    for _, m in mods:
        m.add_arguments(p)
    args = p.parse_args(argv)
    try:
        cfg = convert(args, mods)
    except (common.ConvertError, VocabError, ValueError, OSError, pickle.UnpicklingError) as e:
        # Every converter reports a bad source as one of these (tf1's ConvertError is a ValueError).
        return _error(e, args, with_type=False)
    except (KeyError, IndexError, EOFError, struct.error, zipfile.BadZipFile) as e:
        # What h5py, zipfile, struct and pickle raise on a damaged file the converters did not foresee:
        # still bad input, so one line naming the file, not a traceback.
        return _error(e, args, with_type=True)
    except KeyboardInterrupt:
        return 130  # the user stopped it: no traceback, the shell's status for SIGINT
    except Exception as e:
        # Anything else a hostile file provokes in code that did not foresee it (TypeError, AttributeError,
        # ZeroDivisionError, RecursionError, MemoryError, NotImplementedError, ...): the file is still the
        # cause, so the same one line, with the type to make the report useful. SystemExit passes.
        return _error(e, args, with_type=True)
    print(f"wrote {args.outdir}: vocab {len(cfg['vocab'])}, embedding {cfg['embedding_dim']}, layers "
          f"{[l['hidden_size'] for l in cfg['layers']]}, tied {cfg['tied']}, tokenizer {cfg['tokenizer']['type']}",
          file=sys.stderr)
    return 0


def convert(args, mods):
    """Detects the source type, converts and writes the model; returns write_model's kwargs."""
    if args.source_type:
        mod = dict(mods)[args.source_type]
    else:
        found = [(n, m) for n, m in mods if m.detect(args.source)]
        if not os.path.exists(args.source) and not found:
            raise common.ConvertError(f"{args.source}: no such file")
        if not found:
            raise common.ConvertError(f"{args.source}: not recognised as a Keras, TF2 SavedModel, TF.js, PyTorch, ONNX, TF1 or ml5 "
                                      "model "
                                      f"(use --from {'|'.join(n for n, _ in mods)})")
        mod = found[0][1]
    kwargs = mod.convert(args.source, args)
    write_model(args.outdir, **kwargs)
    return kwargs
