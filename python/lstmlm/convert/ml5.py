"""ml5.js / deeplearn.js char-rnn dumps -> lstmlm model: a directory of one raw float32 file per TF1 variable,
manifest.json mapping each variable name to {"filename", "shape"}, and vocab.json ({char: id}).

These are TF1 char-rnn checkpoints (BasicLSTMCell in a MultiRNNCell, embedding, softmax_w [H, V], softmax_b)
written out by deeplearn.js' dump_checkpoint_vars.py, in both TF naming eras (weights/biases before 1.1,
kernel/bias after). The cell math and its mapping are tf1.py's: [x, h] @ kernel + bias split i, j, f, o,
forget_bias 1.0 (a constructor argument, not stored; --forget-bias otherwise) folded into the f bias.
"""
import json
import math
import os

import numpy as np

from . import common, contained
from . import tf1
from .common import ConvertError
from .vocab import load_vocab

MANIFEST = "manifest.json"


def _directory(path):
    if os.path.isdir(path):
        return path
    if os.path.basename(path) == MANIFEST and os.path.isfile(path):
        return os.path.dirname(path) or "."
    return None


def _read_manifest(path, limit_bytes=1 << 22):
    data = contained.read_contained(os.path.dirname(path), path, path, limit=limit_bytes)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConvertError(f"{path}: not JSON ({e})") from None


def _looks_like_manifest(obj):
    return isinstance(obj, dict) and obj and all(
        isinstance(v, dict) and "filename" in v and "shape" in v for v in obj.values())


def detect(path):
    d = _directory(path)
    if d is None or not os.path.isfile(os.path.join(d, MANIFEST)):
        return False
    try:
        return _looks_like_manifest(_read_manifest(os.path.join(d, MANIFEST)))
    except (ConvertError, OSError):
        return False


def add_arguments(p):
    pass  # tf1's --forget-bias, --embedding-var, --softmax-w-var, ... apply (the same variables)


class ManifestVariables:
    """The variables of a manifest directory, with the interface tf1.convert_variables reads (names, shape,
    entries, tensor, index_path). Every file's size is checked against its shape when the manifest is read."""

    def __init__(self, directory):
        self.dir = directory
        self.index_path = os.path.join(directory, MANIFEST)
        manifest = _read_manifest(self.index_path)
        if not _looks_like_manifest(manifest):
            raise ConvertError(f"{self.index_path}: expected an object of variable name -> "
                               "{\"filename\": ..., \"shape\": [...]}")
        self.entries = {}
        for name, e in manifest.items():
            what = f"{self.index_path}: variable '{name}'"
            fn, shape = e["filename"], e["shape"]
            if not isinstance(fn, str) or not fn or os.path.isabs(fn):
                raise ConvertError(f"{what}: filename {common.brief(fn)} is not a file of this directory")
            if not isinstance(shape, list):
                raise ConvertError(f"{what}: shape {common.brief(shape)} is not a list")
            file = os.path.join(directory, fn)
            if not os.path.lexists(file):
                raise ConvertError(f"{what}: its file {fn} is missing")
            with contained.open_contained(directory, file, f"{what}: file") as f:
                size = os.fstat(f.fileno()).st_size
            count = common.checked_count(shape, 4, size, f"{what} (file {fn}, {size} bytes)")
            if count * 4 != size:
                raise ConvertError(f"{what}: shape {shape} needs {count * 4} bytes of float32, its file {fn} "
                                   f"has {size}")
            self.entries[name] = (file, tuple(shape))

    def names(self):
        return sorted(self.entries)

    def shape(self, name):
        return self.entries[name][1]

    def tensor(self, name):
        file, shape = self.entries[name]
        with contained.open_contained(self.dir, file, f"{self.index_path}: variable '{name}': file") as f:
            data = f.read()
        if len(data) != 4 * math.prod(shape):
            raise ConvertError(f"{file}: {len(data)} bytes now, {4 * math.prod(shape)} when the manifest was read "
                               "(the file changed during the conversion)")
        return np.frombuffer(data, dtype="<f4").reshape(shape).copy()


def _vocab(directory, args, size, where):
    given = getattr(args, "vocab", None)
    path = given or os.path.join(directory, "vocab.json")
    if not os.path.lexists(path):
        raise ConvertError(f"{where}: no vocab.json next to the manifest; give the vocabulary with --vocab")
    v = load_vocab(path, root=None if given else directory)
    if len(v.tokens) != size:
        raise ConvertError(f"{path}: {len(v.tokens)} ids, but the embedding has {size} rows: not this "
                           "model's vocabulary")
    # ml5's charRNN looks up one character at a time (vocab[char]); a key that is not one character can
    # never be produced (shakespeare's vocab.json has "" and "  ": mis-encoded characters): a placeholder
    # keeps its id, as ml5 itself cannot reach it.
    real = [t for t in v.tokens if t is not None]
    if getattr(args, "tokenizer", None) in (None, "char") and real and \
            sum(len(t) == 1 for t in real) >= 0.9 * len(real):
        bad = [(i, t) for i, t in enumerate(v.tokens) if t is not None and len(t) != 1]
        for i, t in bad:
            v.tokens[i] = f"<unused:{i}>"
        if bad:
            v.notes.append("vocabulary keys that are not one character (unreachable by a char tokenizer, as in "
                           "ml5's charRNN) became placeholders: " +
                           ", ".join(f"id {i} {t!r}" for i, t in bad))
            common.note(f"{path}: {len(bad)} key(s) are not one character "
                        f"({', '.join(f'id {i} {t!r}' for i, t in bad)}): kept as unreachable <unused:N> ids")
        v.kind = "char"
    return v


def convert(path, args):
    d = _directory(path)
    if d is None or not os.path.isfile(os.path.join(d, MANIFEST)):
        raise ConvertError(f"{path}: not an ml5 / deeplearn.js variable dump (no {MANIFEST})")
    store = ManifestVariables(d)
    # The exporter keeps this module's former path, as tf1.py does: converted models stay byte-identical.
    source = {"framework": "tensorflow1", "format": "ml5/deeplearn.js variable dump (manifest.json)",
              "file": os.path.basename(os.path.abspath(d)), "exporter": "tools/lstmlm_convert/ml5.py"}
    return tf1.convert_variables(store, args, source, lambda size: _vocab(d, args, size, store.index_path))
