"""The converter command line: main(argv) parses SOURCE OUTDIR [options], detects the source type, converts
and writes the model directory; its status is the exit status. Run by `python3 -m lstmlm.convert` and by the
source checkout's `python3 tools/convert.py`. Every error is one stderr line starting `lstmlm-convert: error: `
whichever runs it (docs/errors.md): the parser's program name is fixed to lstmlm-convert, the installed command.
"""
import argparse
import importlib
import os
import pickle
import struct
import sys
import warnings
import zipfile

from ..format import write_model

from . import common, entry, sniff
from .progress import Progress
from .vocab import VocabError

# The --help text.
DESCRIPTION = """Converts a Keras (.h5 / .keras, Keras 1-3; TF2 SavedModel directory), TF.js layers (model.json), PyTorch (.pt),
ONNX (.onnx), TF1 (checkpoint prefix), ml5 char-rnn (manifest.json directory) or Mikolov rnnlm (text or binary, gzip too) language model into an lstmlm model directory.
usage: lstmlm-convert SOURCE OUTDIR [--vocab FILE] [options]   (see docs/importing.md)"""
PROG = "lstmlm-convert"  # the `lstmlm-convert: error: ` prefix of every line, whatever the entry point


def converters():
    """(name, module) in detection order; a module missing from the package is left out."""
    out = []
    for name, module in (("tfjs", "tfjs"), ("ml5", "ml5"), ("tf2", "tf2_savedmodel"), ("tf1", "tf1"), ("keras", "keras"),
                         ("torch_pt", "torch_pt"), ("onnx", "onnx_model"), ("rnnlm", "rnnlm")):
        try:
            out.append((name, importlib.import_module(f".{module}", __package__)))
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.{module}":
                raise
    return out


MESSAGE_LIMIT = 500  # characters of a message printed, "..." marking the cut


def _escape_char(c):
    """A character fit for a terminal line: control characters (below U+0020, U+007F, and the C1 controls
    U+0080..U+009F) as \\xNN, as the C++ CLI writes control bytes; the line and paragraph separators
    U+2028 / U+2029 as \\u2028 / \\u2029; a lone surrogate (never UTF-8 text: a JSON "\\ud800", or an
    undecodable byte of a path or option, which Python keeps as U+DC80..U+DCFF) as the \\xNN of the bytes
    it stands for."""
    o = ord(c)
    if o < 0x20 or 0x7F <= o <= 0x9F:
        return f"\\x{o:02x}"
    if o in (0x2028, 0x2029):
        return f"\\u{o:04x}"
    if 0xD800 <= o <= 0xDFFF:
        raw = bytes([o - 0xDC00]) if 0xDC80 <= o <= 0xDCFF else c.encode("utf-8", "surrogatepass")
        return "".join(f"\\x{b:02x}" for b in raw)
    return c


def _one_line(msg, limit=MESSAGE_LIMIT):
    """Text fit for one stderr line, the one escaper of every line the converter prints: a message may quote a
    name from the model file (an ESC sequence, a NUL, a newline, a lone surrogate) or span lines (h5py):
    each character goes through _escape_char, and what would take the result past `limit` characters is
    cut, "..." ending it."""
    out, n = [], 0
    for c in str(msg):
        e = _escape_char(c)
        if n + len(e) > limit:
            out.append("...")
            break
        out.append(e)
        n += len(e)
    return "".join(out)


def _print_line(text):
    """One line on stderr, whatever stderr's encoding and error handler (the text is escaped already)."""
    stream = sys.stderr
    try:
        print(text, file=stream)
    except UnicodeEncodeError:
        print(text.encode("ascii", "backslashreplace").decode("ascii"), file=stream)


def _named(e, args):
    """The error's message, prefixed with the source path unless it already names a file given."""
    msg = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    if not msg.strip():
        msg = {"MemoryError": "out of memory"}.get(type(e).__name__, "failed")
    given = [p for p in (args.source, getattr(args, "vocab", None)) if p]
    if not any(p in msg or os.path.basename(p) in msg for p in given):
        msg = f"{args.source}: {msg}"
    return msg


def _error(e, args, with_type):
    suffix = f" ({type(e).__name__})" if with_type else ""
    _print_line(f"{PROG}: error: {_one_line(_named(e, args))}{suffix}")
    return 1


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the converters' one-line errors: `lstmlm-convert: error: <message>` and exit 2, without the
    usage line argparse prints first (--help is argparse's own)."""

    def error(self, message):
        _print_line(f"{PROG}: error: {_one_line(message)}")
        self.exit(2)


def main(argv=None):
    mods = converters()
    p = ArgumentParser(prog=PROG, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="model file (.h5, .keras, .pt, .onnx, model.json), TF checkpoint prefix or ml5 "
                   "directory")
    p.add_argument("outdir", help="model directory to write")
    p.add_argument("--from", dest="source_type", choices=[n for n, _ in mods],
                   help="source type (default: detected from the file)")
    common.add_common_arguments(p)
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="a progress line on stderr while the source is read and the weights written (auto: only "
                        "when stderr is a terminal)")
    for _, m in mods:
        m.add_arguments(p)
    args = p.parse_args(argv)
    common.pending_notes.clear()
    try:
        # Notes and Python warnings (numpy's overflow, h5py's) are held back until the model is written: a
        # conversion that fails prints its one error line and nothing else.
        with warnings.catch_warnings(record=True) as caught:
            try:
                cfg = convert(args, mods)
            finally:
                if getattr(args, "progress_line", None):
                    args.progress_line.finish()
    except (common.ConvertError, VocabError, ValueError, OSError, pickle.UnpicklingError) as e:
        # Every converter reports a bad source as one of these (tf1's ConvertError is a ValueError).
        return _error(e, args, with_type=False)
    except (KeyError, IndexError, EOFError, struct.error, zipfile.BadZipFile) as e:
        # What h5py, zipfile, struct and pickle raise on a damaged file the converters did not foresee:
        # still bad input, so one line naming the file, not a traceback.
        return _error(e, args, with_type=True)
    except KeyboardInterrupt:
        return 130  # the user stopped it: no traceback, the shell's status for SIGINT
    except ModuleNotFoundError as e:
        # h5py (Keras files) is imported when a source needs it: the line names the Debian package.
        line = entry.missing_package_line(e)
        if line is None:
            return _error(e, args, with_type=True)
        _print_line(line)
        return 1
    except Exception as e:
        # Anything else a hostile file provokes in code that did not foresee it (TypeError, AttributeError,
        # ZeroDivisionError, RecursionError, MemoryError, NotImplementedError, ...): the file is still the
        # cause, so the same one line, with the type to make the report useful. SystemExit passes.
        return _error(e, args, with_type=True)
    for w in caught:
        warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
    for text in common.pending_notes:
        _print_line(f"{PROG}: note: {_one_line(text, limit=sys.maxsize)}")
    common.pending_notes.clear()
    _print_line(_one_line(f"wrote {args.outdir}: vocab {len(cfg['vocab'])}, embedding {cfg['embedding_dim']}, "
                          f"layers {[l['hidden_size'] for l in cfg['layers']]}, tied {cfg['tied']}, tokenizer "
                          f"{cfg['tokenizer']['type']}", limit=sys.maxsize))
    return 0


def convert(args, mods):
    """Detects the source type, converts and writes the model; returns write_model's kwargs."""
    line = args.progress_line = Progress(PROG, getattr(args, "progress", "auto"))
    if args.source_type:
        mod = dict(mods)[args.source_type]
        wrong = sniff.wrong_from(args.source, args.source_type, mods)
        if wrong:
            raise common.ConvertError(wrong)
    else:
        found = [(n, m) for n, m in mods if m.detect(args.source)]
        if not os.path.exists(args.source) and not found:
            raise common.ConvertError(f"{args.source}: no such file")
        if not found:
            raise common.ConvertError(f"{args.source}: not recognised as a Keras, TF2 SavedModel, TF.js, PyTorch, ONNX, TF1, ml5 or rnnlm "
                                      "model "
                                      f"(use --from {'|'.join(n for n, _ in mods)})")
        mod = found[0][1]
    line.stage(f"reading {_one_line(args.source, limit=200)}")
    kwargs = mod.convert(args.source, args)
    write_model(args.outdir, **kwargs,
                progress=lambda done, total, n: line.bytes(done, total, f"{n} of {len(kwargs['tensors'])} tensors written"))
    return kwargs
